package statustls

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
)

func bundle(t *testing.T) *certs.Bundle {
	t.Helper()
	b, err := certs.Ensure(t.TempDir(), certs.Options{Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

// TestListener: only clients with a certificate of the client CA get the status; a
// serving certificate replaced on disk is served from the next handshake on.
func TestListener(t *testing.T) {
	a, b := bundle(t), bundle(t)
	dir := t.TempDir()
	cfg := Config{Addr: "127.0.0.1:0", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(a.Dir, certs.CACertFile)}
	copyFile(t, filepath.Join(a.Dir, certs.ServingCertFile), cfg.CertFile)
	copyFile(t, filepath.Join(a.Dir, certs.ServingKeyFile), cfg.KeyFile)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	ln, err := cfg.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("status")) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "https://" + ln.Addr().String() + "/status"

	get := func(client tls.Certificate, roots *x509.CertPool) (*x509.Certificate, error) {
		tc := &tls.Config{RootCAs: roots, InsecureSkipVerify: roots == nil}
		if client.Certificate != nil {
			tc.Certificates = []tls.Certificate{client}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}, Timeout: 5 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return resp.TLS.PeerCertificates[0], nil
	}
	served, err := get(a.AdminTLS, a.CAPool)
	if err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	if _, err := get(tls.Certificate{}, a.CAPool); err == nil {
		t.Fatal("a client without certificate got in")
	}
	if _, err := get(b.AdminTLS, a.CAPool); err == nil {
		t.Fatal("a client with a certificate of another CA got in")
	}

	// Renewed files (here: another CA's serving pair) take effect without a restart.
	copyFile(t, filepath.Join(b.Dir, certs.ServingKeyFile), cfg.KeyFile)
	copyFile(t, filepath.Join(b.Dir, certs.ServingCertFile), cfg.CertFile)
	now := time.Now().Add(time.Second)
	_ = os.Chtimes(cfg.CertFile, now, now) // a new modification time even on a coarse clock
	_ = os.Chtimes(cfg.KeyFile, now, now)
	again, err := get(a.AdminTLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.SerialNumber.Cmp(served.SerialNumber) == 0 {
		t.Fatal("the replaced serving certificate is not served")
	}
}

func TestValidate(t *testing.T) {
	err := (&Config{Addr: "10.77.0.1:9902"}).Validate()
	for _, key := range []string{"status-tls-cert-file", "status-tls-key-file", "status-client-ca-file"} {
		if err == nil || !strings.Contains(err.Error(), key+": required") {
			t.Errorf("want %s required, got %v", key, err)
		}
	}
	if err := (&Config{Addr: "nope", CertFile: "a", KeyFile: "b", ClientCAFile: "c"}).Validate(); err == nil || !strings.Contains(err.Error(), "want host:port") {
		t.Errorf("bad address: %v", err)
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("off: %v", err)
	}
}
