package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func mustEnsure(t *testing.T, dir string, o Options) *Bundle {
	t.Helper()
	b, err := Ensure(dir, o)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEnsureGenerates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	b := mustEnsure(t, dir, Options{Hosts: []string{"10.77.0.10", "master-1.example"}})

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", fi.Mode().Perm())
	}
	for _, f := range []string{CAKeyFile, ServingKeyFile, AdminKeyFile, ServiceAccountKeyFile, FrontProxyCAKeyFile, FrontProxyClientKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if len(b.Generated) != 11 {
		t.Errorf("Generated = %v, want all eleven files", b.Generated)
	}
	// The front-proxy client certificate chains to the front-proxy CA, not the cluster CA.
	fp, err := tls.LoadX509KeyPair(b.FrontProxyClientCert, b.FrontProxyClientKey)
	if err != nil {
		t.Fatal(err)
	}
	fpLeaf, _ := x509.ParseCertificate(fp.Certificate[0])
	fpPool := x509.NewCertPool()
	fpPool.AppendCertsFromPEM(b.FrontProxyCAPEM)
	if _, err := fpLeaf.Verify(x509.VerifyOptions{Roots: fpPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || fpLeaf.Subject.CommonName != FrontProxyClientName {
		t.Errorf("front-proxy client %q: %v", fpLeaf.Subject.CommonName, err)
	}
	if _, err := fpLeaf.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the front-proxy client certificate verifies against the cluster CA")
	}

	serving := b.ServingTLS.Leaf
	wantIPs := []string{"10.77.0.10", "127.0.0.1", "::1"}
	var gotIPs []string
	for _, ip := range serving.IPAddresses {
		gotIPs = append(gotIPs, ip.String())
	}
	slices.Sort(gotIPs)
	if !slices.Equal(gotIPs, wantIPs) {
		t.Errorf("serving IP SANs = %v, want %v", gotIPs, wantIPs)
	}
	if !slices.Equal(serving.DNSNames, []string{"localhost", "master-1.example"}) {
		t.Errorf("serving DNS SANs = %v", serving.DNSNames)
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: b.CAPool, DNSName: "master-1.example"}); err != nil {
		t.Errorf("serving cert does not verify against CA: %v", err)
	}

	admin := b.AdminTLS.Leaf
	if admin.Subject.CommonName != "admin" || !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject = %v", admin.Subject)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert does not verify as a client cert: %v", err)
	}
}

func TestEnsureReuses(t *testing.T) {
	dir := t.TempDir()
	o := Options{Hosts: []string{"10.77.0.10"}}
	mustEnsure(t, dir, o)
	files := map[string][]byte{}
	for _, f := range []string{CACertFile, CAKeyFile, ServingCertFile, ServingKeyFile, AdminCertFile, AdminKeyFile} {
		files[f] = readFile(t, filepath.Join(dir, f))
	}

	b := mustEnsure(t, dir, o)
	if len(b.Generated) != 0 {
		t.Errorf("second Ensure generated %v, want nothing", b.Generated)
	}
	for f, before := range files {
		if !bytes.Equal(before, readFile(t, filepath.Join(dir, f))) {
			t.Errorf("%s changed on second Ensure", f)
		}
	}
	if !bytes.Equal(b.CAPEM, files[CACertFile]) {
		t.Errorf("CAPEM differs from ca.crt")
	}
}

func TestEnsureSANChange(t *testing.T) {
	dir := t.TempDir()
	mustEnsure(t, dir, Options{Hosts: []string{"10.77.0.10"}})
	ca := readFile(t, filepath.Join(dir, CACertFile))
	admin := readFile(t, filepath.Join(dir, AdminCertFile))
	serving := readFile(t, filepath.Join(dir, ServingCertFile))

	tests := []struct {
		name  string
		hosts []string
		regen bool
	}{
		{"added host", []string{"10.77.0.10", "10.77.0.11"}, true},
		{"same set, other order and duplicates", []string{"10.77.0.11", "10.77.0.10", "127.0.0.1", "localhost"}, false},
		{"removed host", []string{"10.77.0.11"}, true},
		{"dns name", []string{"10.77.0.11", "vip.example"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustEnsure(t, dir, Options{Hosts: tt.hosts})
			now := readFile(t, filepath.Join(dir, ServingCertFile))
			if changed := !bytes.Equal(now, serving); changed != tt.regen {
				t.Errorf("serving cert regenerated = %v, want %v (Generated %v)", changed, tt.regen, b.Generated)
			}
			serving = now
			if !bytes.Equal(ca, readFile(t, filepath.Join(dir, CACertFile))) {
				t.Errorf("CA changed")
			}
			if !bytes.Equal(admin, readFile(t, filepath.Join(dir, AdminCertFile))) {
				t.Errorf("admin cert changed")
			}
			for _, h := range tt.hosts {
				if err := b.ServingTLS.Leaf.VerifyHostname(h); err != nil {
					t.Errorf("serving cert: %v", err)
				}
			}
		})
	}
}

func TestEnsureBrokenCA(t *testing.T) {
	dir := t.TempDir()
	mustEnsure(t, dir, Options{})
	if err := os.WriteFile(filepath.Join(dir, CACertFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, Options{}); err == nil {
		t.Fatal("Ensure with a broken CA succeeded, want an error (the CA must never be replaced silently)")
	}
	if got := readFile(t, filepath.Join(dir, CACertFile)); string(got) != "garbage" {
		t.Errorf("broken CA was overwritten")
	}
}

func TestEnsureLeafNotFromCA(t *testing.T) {
	// A serving cert from some other CA is replaced.
	dir, other := t.TempDir(), t.TempDir()
	mustEnsure(t, dir, Options{})
	mustEnsure(t, other, Options{})
	for _, f := range []string{ServingCertFile, ServingKeyFile} {
		if err := os.WriteFile(filepath.Join(dir, f), readFile(t, filepath.Join(other, f)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := mustEnsure(t, dir, Options{})
	if !slices.Equal(b.Generated, []string{ServingCertFile, ServingKeyFile}) {
		t.Errorf("Generated = %v, want the serving pair only", b.Generated)
	}
}

// TestTLSHandshake serves HTTPS on 127.0.0.1 with the bundle and checks that
// the admin certificate is verified and an unknown client cert is refused.
func TestTLSHandshake(t *testing.T) {
	b := mustEnsure(t, t.TempDir(), Options{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.VerifiedChains) == 0 {
			io.WriteString(w, "anonymous")
			return
		}
		c := r.TLS.VerifiedChains[0][0]
		io.WriteString(w, c.Subject.CommonName+"/"+c.Subject.Organization[0])
	}))
	srv.TLS = b.ServerTLSConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)

	get := func(t *testing.T, cfg *tls.Config) (string, error) {
		t.Helper()
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		defer c.CloseIdleConnections()
		resp, err := c.Get(srv.URL)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}

	t.Run("admin", func(t *testing.T) {
		got, err := get(t, b.ClientTLSConfig())
		if err != nil {
			t.Fatal(err)
		}
		if got != "admin/system:masters" {
			t.Errorf("server saw %q", got)
		}
	})
	t.Run("no client cert", func(t *testing.T) {
		got, err := get(t, &tls.Config{RootCAs: b.CAPool})
		if err != nil {
			t.Fatal(err)
		}
		if got != "anonymous" {
			t.Errorf("server saw %q", got)
		}
	})
	t.Run("client cert from another CA", func(t *testing.T) {
		other := mustEnsure(t, t.TempDir(), Options{})
		_, err := get(t, &tls.Config{RootCAs: b.CAPool, Certificates: []tls.Certificate{other.AdminTLS}})
		if err == nil {
			t.Fatal("request with a foreign client cert succeeded")
		}
	})
	t.Run("server not trusted by another CA", func(t *testing.T) {
		other := mustEnsure(t, t.TempDir(), Options{})
		if _, err := get(t, other.ClientTLSConfig()); err == nil {
			t.Fatal("client trusting another CA accepted the server")
		}
	})
	t.Run("localhost name", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		cfg := b.ClientTLSConfig()
		cfg.ServerName = "localhost"
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", port), cfg)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	})
}

func TestWriteKubeconfig(t *testing.T) {
	b := mustEnsure(t, t.TempDir(), Options{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "no client cert", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, r.TLS.VerifiedChains[0][0].Subject.CommonName)
	}))
	srv.TLS = b.ServerTLSConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)

	path := filepath.Join(t.TempDir(), "sub", "admin.kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, b); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode = %v, want 0600", fi.Mode().Perm())
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "hacp" {
		t.Errorf("current-context = %q", cfg.CurrentContext)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != srv.URL {
		t.Errorf("host = %q, want %q", rc.Host, srv.URL)
	}
	// The rest config built from the file must complete a real mTLS request.
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "admin" {
		t.Errorf("GET with kubeconfig credentials: %d %q", resp.StatusCode, body)
	}
}
