package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/certreload"
	"github.com/hacp/hacp/internal/testpki"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// replaceFile writes data to path as a renewal does: a new file renamed over the old one.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func serialOfPEM(t *testing.T, certPEM []byte) string {
	t.Helper()
	certs, err := certreload.ParsePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certreload.Serial(certs[0])
}

// handshakeSerial is the serial of the certificate addr serves on a new TLS connection.
func handshakeSerial(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return certreload.Serial(conn.ConnectionState().PeerCertificates[0])
}

// clientWith is an HTTPS client trusting roots and presenting certPEM/keyPEM.
func clientWith(t *testing.T, roots *x509.CertPool, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}}}
}

// get GETs path with c and returns the status, the serving certificate's serial and whether
// the connection was one opened before.
func get(t *testing.T, c *http.Client, base, path string) (status int, serial string, reused bool, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, certreload.Serial(resp.TLS.PeerCertificates[0]), reused, string(b)
}

// TestServingAndClientCAReload: renewed --tls-cert-file and --client-ca-file files are in use
// after a reload (what the poll and SIGHUP do) without a restart: a new handshake shows the
// new serving serial and accepts client certificates of a CA added to the bundle, while a
// client connected before keeps its connection; a half-written certificate keeps the pair.
func TestServingAndClientCAReload(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA := testpki.NewCA(t, "old-ca"), testpki.NewCA(t, "new-ca")
	oldServing, oldKey := oldCA.Serving(t, "apiserver")
	newServing, newKey := newCA.Serving(t, "apiserver")
	certFile, keyFile := testpki.WriteFile(t, dir, "apiserver.crt", oldServing), testpki.WriteFile(t, dir, "apiserver.key", oldKey)
	caFile := testpki.WriteFile(t, dir, "ca.crt", oldCA.PEM)
	s := servertest.New(t, func(c *server.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.ClientCAFile = certFile, keyFile, caFile
	})
	roots := x509.NewCertPool()
	roots.AddCert(oldCA.Cert)
	roots.AddCert(newCA.Cert)
	oldAdmin, oldAdminKey := oldCA.Client(t, "admin", "system:masters")
	newAdmin, newAdminKey := newCA.Client(t, "admin2", "system:masters")
	before := clientWith(t, roots, oldAdmin, oldAdminKey)
	handshake := &tls.Config{RootCAs: roots}

	if code, serial, _, body := get(t, before, s.URL(), "/api/v1/namespaces/default"); code != http.StatusOK || serial != serialOfPEM(t, oldServing) {
		t.Fatalf("before the renewal: %d, serial %s: %s", code, serial, body)
	}
	// The handshake does not list the new CA yet, so the client sends no certificate: anonymous.
	if code, _, _, body := get(t, clientWith(t, roots, newAdmin, newAdminKey), s.URL(), "/api/v1/namespaces/default"); code != http.StatusForbidden {
		t.Fatalf("a client certificate of a CA not yet in --client-ca-file: %d, want 403 (anonymous): %s", code, body)
	}

	replaceFile(t, keyFile, newKey)
	replaceFile(t, certFile, newServing)
	replaceFile(t, caFile, append(append([]byte{}, oldCA.PEM...), newCA.PEM...))
	if n := s.ReloadCertificates(); n != 2 {
		t.Fatalf("%d certificates reloaded, want 2 (serving, client CA)", n)
	}

	code, serial, reused, body := get(t, before, s.URL(), "/api/v1/namespaces/default")
	if code != http.StatusOK || !reused || serial != serialOfPEM(t, oldServing) {
		t.Errorf("the client connected before: %d, connection reused %v, serial %s (want the old one): %s", code, reused, serial, body)
	}
	if got, want := handshakeSerial(t, s.Addr(), handshake), serialOfPEM(t, newServing); got != want {
		t.Errorf("a new handshake shows serial %s, want the renewed %s", got, want)
	}
	after := clientWith(t, roots, newAdmin, newAdminKey)
	if code, _, _, body := get(t, after, s.URL(), "/api/v1/namespaces/default"); code != http.StatusOK {
		t.Errorf("a client certificate of the CA added to --client-ca-file: %d: %s", code, body)
	}
	if code, _, _, body := get(t, after, s.URL(), "/metrics"); code != http.StatusOK ||
		!strings.Contains(body, `hacp_cert_loaded_expiry_seconds{cert="serving",serial="`+serialOfPEM(t, newServing)+`"`) {
		t.Errorf("/metrics (%d) does not show the renewed serving serial:\n%s", code, grepLines(body, "hacp_cert_loaded"))
	}

	replaceFile(t, certFile, oldServing[:len(oldServing)/2]) // caught half-written
	if n := s.ReloadCertificates(); n != 0 {
		t.Errorf("%d certificates reloaded from a half-written file", n)
	}
	if got, want := handshakeSerial(t, s.Addr(), handshake), serialOfPEM(t, newServing); got != want {
		t.Errorf("after a half-written file a handshake shows %s, want the pair in use %s", got, want)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestEmbeddedEtcdServesRenewedCertificate: the embedded member's client URL serves a renewed
// etcd/server.crt on the next handshake, with no reload by hacp (etcd's transport.TLSInfo
// reads the files at each handshake; its peer URL uses the same code), and the apiserver,
// whose etcd client certificate is renewed with it, keeps reading and writing.
func TestEmbeddedEtcdServesRenewedCertificate(t *testing.T) {
	s := servertest.New(t, nil)
	live := s.Certs().Dir
	etcdTLS, err := certs.LoadEtcdClientTLS(live)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.EtcdClientURL())
	if err != nil {
		t.Fatal(err)
	}
	oldSerial := handshakeSerial(t, u.Host, etcdTLS)

	// Renew the leaves with the same etcd CA, as rotate-certs.yml does.
	renewed := t.TempDir()
	for _, f := range []string{certs.EtcdCACertFile, certs.EtcdCAKeyFile} {
		data, err := os.ReadFile(filepath.Join(live, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(renewed, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		testpki.WriteFile(t, renewed, f, data)
	}
	if _, err := certs.EnsureEtcd(renewed, []string{u.Hostname()}, 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{certs.EtcdServerKeyFile, certs.EtcdServerCertFile, certs.EtcdClientKeyFile, certs.EtcdClientCertFile} {
		data, err := os.ReadFile(filepath.Join(renewed, f))
		if err != nil {
			t.Fatal(err)
		}
		replaceFile(t, filepath.Join(live, f), data)
	}
	newServer, err := os.ReadFile(filepath.Join(renewed, certs.EtcdServerCertFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := handshakeSerial(t, u.Host, etcdTLS), serialOfPEM(t, newServer); got != want || got == oldSerial {
		t.Errorf("the member's client URL serves serial %s after the renewal, want %s (was %s)", got, want, oldSerial)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-renewal"}}
	if _, err := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s)).CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("a write after the renewal: %v", err)
	}
}
