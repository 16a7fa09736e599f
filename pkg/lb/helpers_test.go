package lb

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testBackend is a small apiserver stand-in: a TLS HTTP server on 127.0.0.1 with
// /healthz (status settable), /name, and /stream (watch-like: one line per event).
type testBackend struct {
	name   string
	srv    *httptest.Server
	ln     *trackListener
	status atomic.Int32
}

// trackListener remembers accepted connections so kill can reset them.
type trackListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func newBackend(t *testing.T, name string) *testBackend {
	t.Helper()
	return newBackendOn(t, name, nil)
}

// newBackendOn is newBackend serving on ln (nil: httptest's own listener).
func newBackendOn(t *testing.T, name string, ln net.Listener) *testBackend {
	t.Helper()
	b := &testBackend{name: name}
	b.status.Store(http.StatusOK)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(b.status.Load()))
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/name", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, name)
	})
	// /stream?every=D&silence=D: the first line is the backend's name, then an event line
	// every D, or, with silence, one line after that long and the end.
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		every, _ := time.ParseDuration(r.URL.Query().Get("every"))
		silence, _ := time.ParseDuration(r.URL.Query().Get("silence"))
		fl := w.(http.Flusher)
		fmt.Fprintln(w, name)
		fl.Flush()
		if silence > 0 {
			select {
			case <-time.After(silence):
				fmt.Fprintln(w, "end")
			case <-r.Context().Done():
			}
			return
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-tick.C:
				if _, err := fmt.Fprintf(w, "event %d\n", i); err != nil {
					return
				}
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	b.ln = &trackListener{Listener: srv.Listener}
	srv.Listener = b.ln
	srv.StartTLS()
	b.srv = srv
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return b
}

func (b *testBackend) addr() string { return b.ln.Addr().String() }

// kill makes the backend vanish like a crashed process: its port refuses new connections
// and its open connections are reset.
func (b *testBackend) kill() {
	b.ln.Close()
	b.ln.mu.Lock()
	defer b.ln.mu.Unlock()
	for _, c := range b.ln.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

// writeCA writes the PEM of the backends' (httptest's shared) certificate.
func writeCA(t *testing.T, b *testBackend) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testConfig is a config for fast tests: quick checks, loopback listener.
func testConfig(backends ...*testBackend) *Config {
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.CheckInsecure = true
	cfg.CheckInterval = 100 * time.Millisecond
	cfg.CheckFastInterval = 50 * time.Millisecond
	// Generous: under -race on a loaded 2-core machine an HTTPS check can take over a
	// second, and two such in a row took a healthy backend DOWN in the middle of a test.
	// Tests that want a backend DOWN stop it or fail its /healthz, which fails at once.
	cfg.CheckTimeout = 5 * time.Second
	cfg.DrainTimeout = 5 * time.Second
	for _, b := range backends {
		cfg.Backends = append(cfg.Backends, b.addr())
	}
	return cfg
}

type runningProxy struct {
	*Proxy
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
}

func startProxy(t *testing.T, cfg *Config) *runningProxy {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp := &runningProxy{Proxy: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rp.done)
		if err := p.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-rp.done:
		case <-time.After(30 * time.Second):
			t.Error("proxy did not stop")
		}
	})
	return rp
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// backendState returns the state of the backend at addr in p's status.
func backendState(p *Proxy, addr string) BackendStatus {
	for _, b := range p.Status().Backends {
		if b.Addr == addr && b.State != "REMOVED" {
			return b
		}
	}
	return BackendStatus{}
}

func waitState(t *testing.T, p *Proxy, addr, state string) {
	t.Helper()
	waitFor(t, addr+" "+state, 20*time.Second, func() bool { return backendState(p, addr).State == state })
}

func waitAllUp(t *testing.T, p *Proxy) {
	t.Helper()
	waitFor(t, "every backend UP", 20*time.Second, func() bool {
		for _, b := range p.Status().Backends {
			if b.State != "UP" {
				return false
			}
		}
		return true
	})
}

// client makes one fresh TCP connection through the proxy per request.
func client(proxy net.Addr) *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", proxy.String())
			},
		},
	}
}

// get fetches path through the proxy on a new connection and returns the body.
func get(t *testing.T, proxy net.Addr, path string) string {
	t.Helper()
	resp, err := client(proxy).Get("https://lbproxy" + path)
	if err != nil {
		t.Fatalf("GET %s through the proxy: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", path, err)
	}
	return string(body)
}

// stream is an open watch-like response read through the proxy.
type stream struct {
	backend string
	conn    *tls.Conn
	r       *bufio.Reader
}

func openStream(t *testing.T, proxy net.Addr, query string) *stream {
	t.Helper()
	raw, err := net.DialTimeout("tcp", proxy.String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /stream?%s HTTP/1.1\r\nHost: lbproxy\r\n\r\n", query); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	s := &stream{conn: c, r: bufio.NewReader(resp.Body)}
	s.backend = s.line(t)
	return s
}

// line reads the next line of the stream.
func (s *stream) line(t *testing.T) string {
	t.Helper()
	l, err := s.next(20 * time.Second)
	if err != nil {
		t.Fatalf("stream from %s: %v", s.backend, err)
	}
	return l
}

func (s *stream) next(timeout time.Duration) (string, error) {
	_ = s.conn.SetReadDeadline(time.Now().Add(timeout))
	l, err := s.r.ReadString('\n')
	if len(l) > 0 && l[len(l)-1] == '\n' {
		l = l[:len(l)-1]
	}
	return l, err
}

func itoa(i int) string { return strconv.Itoa(i) }
