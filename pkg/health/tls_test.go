package health

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testpki"
)

// TestCheckerReloadsItsOwnCAFile: a checker that loaded CAFile itself (vipd's) reads it again
// before a probe once TLSReloadInterval has passed, so a CA added to the file verifies the
// target from then on without a new checker; a half-written file keeps the CAs in use.
func TestCheckerReloadsItsOwnCAFile(t *testing.T) {
	oldCA, newCA := testpki.NewCA(t, "old-ca"), testpki.NewCA(t, "new-ca")
	var serving atomic.Pointer[tls.Certificate]
	setServing := func(ca *testpki.CA) {
		certPEM, keyPEM := ca.Serving(t, "target")
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		serving.Store(&c)
	}
	setServing(oldCA)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		_ = srv.Serve(tls.NewListener(ln, &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return serving.Load(), nil }}))
	}()
	t.Cleanup(func() { _ = srv.Close() })

	caFile := testpki.WriteFile(t, t.TempDir(), "ca.crt", oldCA.PEM)
	c, err := New(Config{URL: "https://" + ln.Addr().String() + "/healthz", Interval: time.Hour, Timeout: 5 * time.Second, Rise: 1, Fall: 1,
		CAFile: caFile, TLSReloadInterval: time.Nanosecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.CheckNow(ctx); err != nil {
		t.Fatalf("target with a certificate of the CA in the file: %v", err)
	}
	setServing(newCA)
	if err := c.CheckNow(ctx); err == nil {
		t.Fatal("a certificate of a CA not in the file verified")
	}
	write := func(data []byte) {
		if err := os.WriteFile(caFile, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(append(append([]byte{}, oldCA.PEM...), newCA.PEM...))
	if err := c.CheckNow(ctx); err != nil {
		t.Fatalf("after the new CA was added to the file: %v", err)
	}
	write(oldCA.PEM[:len(oldCA.PEM)/2])
	if err := c.CheckNow(ctx); err != nil {
		t.Fatalf("a half-written CA file replaced the CAs in use: %v", err)
	}
}
