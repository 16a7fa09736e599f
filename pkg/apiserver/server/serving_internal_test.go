package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
)

// startInternal starts a server on an embedded member of its own, with tune applied to the
// Server before Start (for the unexported knobs tests shorten), and shuts it down at cleanup.
func startInternal(t *testing.T, tune func(*Server)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.SecurePort, cfg.ShutdownDelay, cfg.EtcdUnsafeNoFsync = t.TempDir(), 0, 0, true
	var err error
	if cfg.EtcdListenClientURL, err = embedetcd.FreeLocalHTTPSURL(); err != nil {
		t.Fatal(err)
	}
	if cfg.EtcdListenPeerURL, err = embedetcd.FreeLocalURL(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tune(s)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// startIdle starts a server that closes connections idle for idle.
func startIdle(t *testing.T, idle time.Duration) *Server {
	t.Helper()
	return startInternal(t, func(s *Server) { s.idleTimeout = idle })
}

// closeWatch is a client connection that reports when a read fails: the server closed it.
type closeWatch struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *closeWatch) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.once.Do(func() { close(c.closed) })
	}
	return n, err
}

// dialTLS opens a TLS connection to s as admin, offering proto by ALPN.
func dialTLS(t *testing.T, s *Server, proto string) *closeWatch {
	t.Helper()
	conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: s.bundle.CAPool, Certificates: []tls.Certificate{s.bundle.AdminTLS},
		ServerName: "127.0.0.1", NextProtos: []string{proto}})
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.ConnectionState().NegotiatedProtocol; got != proto {
		t.Fatalf("negotiated %q, want %q", got, proto)
	}
	t.Cleanup(func() { conn.Close() })
	return &closeWatch{Conn: conn, closed: make(chan struct{})}
}

// waitClosed waits (up to 30 seconds) for the server to close c.
func waitClosed(t *testing.T, c *closeWatch) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the idle connection is still open after 30s")
	}
}

// TestIdleConnectionsClosed: a keep-alive connection that carries no request for the idle
// timeout is closed by the server, over HTTP/1.1 and HTTP/2, as kube-apiserver closes
// them (after 90 s there; a quarter of a second here).
func TestIdleConnectionsClosed(t *testing.T) {
	s := startIdle(t, 250*time.Millisecond)

	t.Run("HTTP/1.1", func(t *testing.T) {
		c := dialTLS(t, s, "http/1.1")
		if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("/livez: %s, close %v: want 200 on a kept-alive connection", resp.Status, resp.Close)
		}
		go func() { _, _ = io.Copy(io.Discard, r) }() // reads until the server closes
		waitClosed(t, c)
	})

	t.Run("HTTP/2", func(t *testing.T) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.bundle.CAPool, Certificates: []tls.Certificate{s.bundle.AdminTLS}}}
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP2(true)
		t.Cleanup(tr.CloseIdleConnections)
		cc, err := tr.NewClientConn(context.Background(), "https", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		req, err := http.NewRequest(http.MethodGet, "https://"+s.Addr()+"/livez", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			t.Fatalf("/livez: %s over %s, want 200 over HTTP/2", resp.Status, resp.Proto)
		}
		unusable := make(chan struct{})
		var once sync.Once
		cc.SetStateHook(func(cc *http.ClientConn) {
			if cc.Err() != nil {
				once.Do(func() { close(unusable) })
			}
		})
		select {
		case <-unusable:
		case <-time.After(30 * time.Second):
			t.Fatal("the idle HTTP/2 connection is still open after 30s")
		}
	})
}

// TestSecureServerLimits: the server's limits are kube-apiserver's.
func TestSecureServerLimits(t *testing.T) {
	srv := newSecureServer(http.NotFoundHandler(), &tls.Config{}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h2 := srv.HTTP2
	if srv.IdleTimeout != 90*time.Second || srv.ReadHeaderTimeout != 32*time.Second || srv.MaxHeaderBytes != 1<<20 || h2 == nil ||
		h2.MaxConcurrentStreams != 100 || h2.MaxReadFrameSize != 256<<10 || h2.MaxReceiveBufferPerStream != 256<<10 || h2.MaxReceiveBufferPerConnection != 100*256<<10 {
		t.Fatalf("idle %v, read header %v, max header bytes %d, HTTP/2 %+v", srv.IdleTimeout, srv.ReadHeaderTimeout, srv.MaxHeaderBytes, h2)
	}
}
