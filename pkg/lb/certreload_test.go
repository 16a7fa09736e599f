package lb

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/certreload"
	"github.com/hacp/hacp/internal/testpki"
)

// certBackend is an HTTPS /healthz that requires a client certificate of clientCA and
// records, per check, the client certificate's serial and the serving certificate's.
type certBackend struct {
	serving atomic.Pointer[tls.Certificate]
	mu      sync.Mutex
	served  map[string]string // client address: serial of the certificate its handshake got
	seen    []checkSeen
	srv     *httptest.Server
}

type checkSeen struct{ client, serving string }

func newCertBackend(t *testing.T, clientCA *x509.CertPool, certPEM, keyPEM []byte) *certBackend {
	t.Helper()
	b := &certBackend{served: map[string]string{}}
	b.setServing(t, certPEM, keyPEM)
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.seen = append(b.seen, checkSeen{client: certreload.Serial(r.TLS.PeerCertificates[0]), serving: b.served[r.RemoteAddr]})
		b.mu.Unlock()
		fmt.Fprintln(w, "ok")
	}))
	// A TLS listener of its own: httptest's StartTLS would add its certificate, which an
	// IP-addressed handshake (no SNI) gets instead of GetCertificate's.
	b.srv.Listener = tls.NewListener(b.srv.Listener, &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			c := b.serving.Load()
			b.mu.Lock()
			b.served[hello.Conn.RemoteAddr().String()] = certreload.Serial(c.Leaf)
			b.mu.Unlock()
			return c, nil
		}})
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *certBackend) setServing(t *testing.T, certPEM, keyPEM []byte) {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	b.serving.Store(&c)
}

// seenSince returns the checks recorded after the first n.
func (b *certBackend) seenSince(n int) []checkSeen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]checkSeen(nil), b.seen[min(n, len(b.seen)):]...)
}

func (b *certBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.seen)
}

func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	certs, err := certreload.ParsePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certreload.Serial(certs[0])
}

func renameOver(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCertificatesReload: lbproxy's https checks present a renewed check-cert and trust a
// CA added to check-ca once the files are read again (the poll, or SIGHUP), without a restart
// and without a failed check: the backend moves to a certificate of the new CA and stays UP.
// A half-written check-cert keeps the pair in use.
func TestCheckCertificatesReload(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA, clientCA := testpki.NewCA(t, "old-ca"), testpki.NewCA(t, "new-ca"), testpki.NewCA(t, "client-ca")
	oldServing, oldServingKey := oldCA.Serving(t, "apiserver")
	newServing, newServingKey := newCA.Serving(t, "apiserver")
	client1, key1 := clientCA.Client(t, "lbproxy")
	client2, key2 := clientCA.Client(t, "lbproxy")
	b := newCertBackend(t, clientCA.Pool, oldServing, oldServingKey)

	cfg := testConfig()
	cfg.Backends = []string{b.srv.Listener.Addr().String()}
	cfg.CheckInsecure = false
	cfg.CheckCA = testpki.WriteFile(t, dir, "ca.crt", oldCA.PEM)
	cfg.CheckCert, cfg.CheckKey = testpki.WriteFile(t, dir, "check.crt", client1), testpki.WriteFile(t, dir, "check.key", key1)
	p := startProxy(t, cfg)
	addr := cfg.Backends[0]
	waitAllUp(t, p.Proxy)

	// The client pair renewed.
	renameOver(t, cfg.CheckKey, key2)
	renameOver(t, cfg.CheckCert, client2)
	if n := p.ReloadCertificates(); n != 1 {
		t.Fatalf("%d reloaded, want 1 (check-client)", n)
	}
	mark := b.count()
	waitFor(t, "a check with the renewed client certificate", 20*time.Second, func() bool {
		s := b.seenSince(mark)
		return len(s) > 0 && s[len(s)-1].client == serialOf(t, client2)
	})

	// The CA rotated: both trusted, then the backend serves a certificate of the new one.
	renameOver(t, cfg.CheckCA, append(append([]byte{}, oldCA.PEM...), newCA.PEM...))
	if n := p.ReloadCertificates(); n != 1 {
		t.Fatalf("%d reloaded, want 1 (check-ca)", n)
	}
	failures := backendState(p.Proxy, addr).Check.Failures
	b.setServing(t, newServing, newServingKey)
	mark = b.count()
	waitFor(t, "two checks of the backend serving the new CA's certificate", 20*time.Second, func() bool {
		n := 0
		for _, s := range b.seenSince(mark) {
			if s.serving == serialOf(t, newServing) {
				n++
			}
		}
		return n >= 2
	})
	if st := backendState(p.Proxy, addr); st.State != "UP" || st.Check.Failures != failures {
		t.Errorf("backend %s with %d failed checks since the CA rotation (%s)", st.State, st.Check.Failures-failures, st.Check.LastError)
	}

	// A half-written certificate is not used.
	renameOver(t, cfg.CheckCert, client1[:len(client1)/2])
	if n := p.ReloadCertificates(); n != 0 {
		t.Errorf("%d reloaded from a half-written check-cert", n)
	}
	mark = b.count()
	waitFor(t, "a check after the half-written file", 20*time.Second, func() bool { return len(b.seenSince(mark)) > 0 })
	if s := b.seenSince(mark); s[0].client != serialOf(t, client2) {
		t.Errorf("check with client serial %s after a half-written file, want %s", s[0].client, serialOf(t, client2))
	}
}
