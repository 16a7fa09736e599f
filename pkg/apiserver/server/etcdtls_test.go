package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The canary a test writes into etcd and then tries to read back past the apiserver.
const (
	canaryKey   = "/registry/secrets/default/etcd-tls-canary"
	canaryValue = "etcd-tls-canary-value"
)

// putCanary writes the canary through the apiserver's own etcd client.
func putCanary(t *testing.T, s *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.EtcdClient().Put(ctx, canaryKey, canaryValue); err != nil {
		t.Fatal(err)
	}
}

// rawRange asks the member at clientURL (its scheme replaced by scheme) for the canary over
// etcd's HTTP gateway, as `curl $URL/v3/kv/range` would, and returns the status and body.
func rawRange(clientURL, scheme string, tlsCfg *tls.Config) (int, string, error) {
	u, err := url.Parse(clientURL)
	if err != nil {
		return 0, "", err
	}
	u.Scheme, u.Path = scheme, "/v3/kv/range"
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(canaryKey))})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := hc.Post(u.String(), "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// canaryIn reports whether a range response body holds the canary's value.
func canaryIn(body string) bool {
	return strings.Contains(body, base64.StdEncoding.EncodeToString([]byte(canaryValue)))
}

// tlsGet reads the canary with an etcd client that uses tlsCfg.
func tlsGet(t *testing.T, clientURL string, tlsCfg *tls.Config) string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, canaryKey)
	if err != nil {
		t.Fatalf("get %s over %s: %v", canaryKey, clientURL, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %d values", canaryKey, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// caPool reads a CA file into a pool.
func caPool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(readBytes(t, file)) {
		t.Fatalf("%s: no certificate", file)
	}
	return pool
}

func readBytes(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEmbeddedEtcdRequiresClientCertificates: the embedded member's client URL serves only
// TLS clients with a certificate of the etcd CA, such as the generated apiserver-etcd-client.
func TestEmbeddedEtcdRequiresClientCertificates(t *testing.T) {
	s := servertest.New(t, nil)
	putCanary(t, s)
	clientURL, pki := s.EtcdClientURL(), s.Certs().Dir
	if !strings.HasPrefix(clientURL, "https://") {
		t.Fatalf("client URL %s is not https", clientURL)
	}
	etcdCA := caPool(t, filepath.Join(pki, certs.EtcdCACertFile))
	admin, err := tls.LoadX509KeyPair(filepath.Join(pki, certs.AdminCertFile), filepath.Join(pki, certs.AdminKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name, scheme string
		tls          *tls.Config
	}{
		{"plain HTTP", "http", nil},
		{"HTTPS without a client certificate", "https", &tls.Config{RootCAs: etcdCA}},
		// Sent whatever CAs the member asks for (Go's client would otherwise send none).
		{"HTTPS with the cluster CA's admin certificate", "https", &tls.Config{RootCAs: etcdCA,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &admin, nil }}},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			code, body, err := rawRange(clientURL, tc.scheme, tc.tls)
			t.Logf("%d %q %v", code, body, err)
			if err == nil && (code == http.StatusOK || canaryIn(body)) {
				t.Fatalf("read etcd: %d %s", code, body)
			}
			if tc.scheme == "https" && (err == nil || !strings.Contains(err.Error(), "tls: ")) {
				t.Fatalf("TLS handshake not refused: %d %s %v", code, body, err)
			}
		})
	}
	client, err := certs.LoadEtcdClientTLS(pki)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the generated client certificate reads", func(t *testing.T) {
		if got := tlsGet(t, clientURL, client); got != canaryValue {
			t.Fatalf("got %q", got)
		}
		code, body, err := rawRange(clientURL, "https", client)
		if err != nil || code != http.StatusOK || !canaryIn(body) {
			t.Fatalf("range over HTTPS with the client certificate: %d %s %v", code, body, err)
		}
	})
}

// insecureConfig is a servertest config with a plain HTTP client URL, opted into.
func insecureConfig(t *testing.T, dir string) *server.Config {
	t.Helper()
	cfg, err := servertest.Config(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.EtcdListenClientURL = strings.Replace(cfg.EtcdListenClientURL, "https://", "http://", 1)
	cfg.EtcdAllowInsecureClient = true
	return cfg
}

// startServer starts cfg's server; the test's cleanup stops it. A start that loses one of
// its etcd ports to another process (packages test in parallel) is retried on new ones,
// the client URL keeping its scheme.
func startServer(t *testing.T, cfg *server.Config) *server.Server {
	t.Helper()
	var err error
	for range 5 {
		var s *server.Server
		if s, err = servertest.Start(cfg, nil); err == nil {
			t.Cleanup(func() { _ = s.Shutdown() })
			return s
		}
		if !embedetcd.IsAddrInUse(err) {
			break
		}
		fresh, ferr := servertest.Config(t.TempDir())
		if ferr != nil {
			t.Fatal(ferr)
		}
		scheme, _, _ := strings.Cut(cfg.EtcdListenClientURL, "://")
		_, rest, _ := strings.Cut(fresh.EtcdListenClientURL, "://")
		cfg.EtcdListenClientURL, cfg.EtcdListenPeerURL = scheme+"://"+rest, fresh.EtcdListenPeerURL
	}
	t.Fatal(err)
	return nil
}

// TestEmbeddedEtcdInsecureOptIn: with etcd-allow-insecure-client an http:// client URL serves
// plain HTTP to anyone (what the default prevents), and no etcd certificates are made.
func TestEmbeddedEtcdInsecureOptIn(t *testing.T) {
	cfg := insecureConfig(t, t.TempDir())
	s := startServer(t, cfg)
	putCanary(t, s)
	code, body, err := rawRange(s.EtcdClientURL(), "http", nil)
	if err != nil || code != http.StatusOK || !canaryIn(body) {
		t.Fatalf("plain HTTP range: %d %s %v", code, body, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "pki", "etcd")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pki/etcd made for a plain HTTP client URL: %v", err)
	}
}

// etcdFiles are the generated etcd PKI files, relative to the cert dir.
var etcdFiles = []string{certs.EtcdCACertFile, certs.EtcdCAKeyFile, certs.EtcdServerCertFile, certs.EtcdServerKeyFile,
	certs.EtcdClientCertFile, certs.EtcdClientKeyFile}

// TestEmbeddedEtcdCertificatesOnRestart: a data dir made without etcd client TLS gets its
// certificates on the first start with it, its data is kept, and later restarts reuse them.
func TestEmbeddedEtcdCertificatesOnRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := insecureConfig(t, dir)
	s := startServer(t, cfg)
	putCanary(t, s)
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	cfg.EtcdListenClientURL = strings.Replace(cfg.EtcdListenClientURL, "http://", "https://", 1)
	cfg.EtcdAllowInsecureClient = false
	pki := filepath.Join(dir, "pki")
	var first [][]byte
	for run := range 2 {
		s := startServer(t, cfg)
		client, err := certs.LoadEtcdClientTLS(pki)
		if err != nil {
			t.Fatal(err)
		}
		if got := tlsGet(t, s.EtcdClientURL(), client); got != canaryValue {
			t.Fatalf("run %d: got %q", run, got)
		}
		for i, f := range etcdFiles {
			data := readBytes(t, filepath.Join(pki, f))
			if run == 0 {
				first = append(first, data)
			} else if !bytes.Equal(data, first[i]) {
				t.Fatalf("%s changed on restart", f)
			}
		}
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEmbeddedEtcdGivenCertificates: with etcd-cert-file and the rest given, the member serves
// and requires those, and nothing is generated.
func TestEmbeddedEtcdGivenCertificates(t *testing.T) {
	own := t.TempDir()
	eb, err := certs.EnsureEtcd(own, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := servertest.Config(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.EtcdMemberCertFile, cfg.EtcdMemberKeyFile, cfg.EtcdTrustedCAFile = eb.ServerCert, eb.ServerKey, eb.CACert
	cfg.EtcdCertFile, cfg.EtcdKeyFile = eb.ClientCert, eb.ClientKey
	s := startServer(t, cfg)
	putCanary(t, s)
	client, err := certs.LoadEtcdClientTLS(own)
	if err != nil {
		t.Fatal(err)
	}
	if got := tlsGet(t, s.EtcdClientURL(), client); got != canaryValue {
		t.Fatalf("got %q", got)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "pki", "etcd")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pki/etcd generated although the files were given: %v", err)
	}
	code, body, err := rawRange(s.EtcdClientURL(), "https", &tls.Config{RootCAs: caPool(t, eb.CACert)})
	if err == nil || !strings.Contains(err.Error(), "tls: ") {
		t.Fatalf("HTTPS without a client certificate not refused: %d %s %v", code, body, err)
	}
}
