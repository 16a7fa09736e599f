package lb

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/internal/testenv"
)

func TestRoundRobin(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		n       int
		want    []int // requests per backend
	}{
		{"equal weights", []int{1, 1, 1}, 9, []int{3, 3, 3}},
		{"weighted", []int{2, 1, 1}, 8, []int{4, 2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var backends []*testBackend
			for i := range tt.weights {
				backends = append(backends, newBackend(t, "b"+itoa(i)))
			}
			cfg := testConfig()
			for i, b := range backends {
				cfg.Backends = append(cfg.Backends, b.addr()+" weight="+itoa(tt.weights[i]))
			}
			p := startProxy(t, cfg)
			waitAllUp(t, p.Proxy)

			var seq []string
			count := map[string]int{}
			for range tt.n {
				name := get(t, p.Addr(), "/name")
				seq = append(seq, name)
				count[name]++
			}
			t.Logf("order: %v", seq)
			for i, b := range backends {
				if count[b.name] != tt.want[i] {
					t.Errorf("%s got %d requests, want %d (order %v)", b.name, count[b.name], tt.want[i], seq)
				}
			}
			// Equal weights rotate strictly; weighted ones never send the same backend
			// more than its share in a row.
			if tt.name == "equal weights" {
				for i := 3; i < len(seq); i++ {
					if seq[i] != seq[i-3] {
						t.Errorf("order %v is not a rotation", seq)
						break
					}
				}
			} else {
				for i := 1; i < len(seq); i++ {
					if seq[i] == seq[i-1] && seq[i] != "b0" {
						t.Errorf("order %v: %s twice in a row", seq, seq[i])
					}
				}
			}
		})
	}
}

func TestLeastConn(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := testConfig(a, b)
	cfg.Balance = "leastconn"
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	// With no sessions anywhere, two long streams go to distinct backends.
	s1 := openStream(t, p.Addr(), "every=1h")
	s2 := openStream(t, p.Addr(), "every=1h")
	if s1.backend == s2.backend {
		t.Fatalf("two streams on one backend %s with leastconn", s1.backend)
	}
	// A third stream goes anywhere; then every short request must go to the other one,
	// the backend with fewer sessions.
	s3 := openStream(t, p.Addr(), "every=1h")
	for range 4 {
		// The previous request's session ends a moment after its response.
		waitFor(t, "only the streams open", 10*time.Second, func() bool { return p.Status().ActiveConns == 3 })
		if got := get(t, p.Addr(), "/name"); got == s3.backend {
			t.Fatalf("short request went to %s, which holds 2 streams against 1", got)
		}
	}
}

func TestFallAndRise(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	cfg := testConfig(a, b, c)
	cfg.CheckCA = writeCA(t, a) // real verification against the CA file
	cfg.CheckInsecure = false
	cfg.Fall, cfg.Rise = 3, 2
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	b.status.Store(http.StatusInternalServerError)
	waitState(t, p.Proxy, b.addr(), "DOWN")
	st := backendState(p.Proxy, b.addr())
	if st.Check.Failures < 3 {
		t.Errorf("DOWN after %d failed checks, want fall=3", st.Check.Failures)
	}
	if !strings.Contains(st.Check.LastError, "status 500") {
		t.Errorf("last error %q, want the 500", st.Check.LastError)
	}
	for range 6 {
		if got := get(t, p.Addr(), "/name"); got == "b" {
			t.Fatal("request went to DOWN backend b")
		}
	}

	b.status.Store(http.StatusOK)
	waitState(t, p.Proxy, b.addr(), "UP")
	seen := map[string]bool{}
	for range 3 {
		seen[get(t, p.Addr(), "/name")] = true
	}
	if !seen["b"] {
		t.Errorf("b is UP again but got no request: %v", seen)
	}
}

func TestKilledBackend(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := testConfig(a, b)
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	s := openStream(t, p.Addr(), "every=20ms")
	s.line(t)
	victim, other := a, b
	if s.backend == "b" {
		victim, other = b, a
	}
	victim.kill()

	// The stream breaks (reset passed on, or closed when the backend went DOWN).
	for {
		_, err := s.next(20 * time.Second)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("stream through a killed backend still open")
		}
		t.Logf("stream ended: %v", err)
		break
	}
	for range 4 {
		if got := get(t, p.Addr(), "/name"); got != other.name {
			t.Fatalf("request went to %s, want %s", got, other.name)
		}
	}
	waitState(t, p.Proxy, victim.addr(), "DOWN")
}

func TestRetryHidesRefusedConnect(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	cfg := testConfig(a, b, c)
	cfg.CheckInterval = time.Hour // only the passive check can notice
	cfg.CheckFastInterval = time.Hour
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	b.kill()
	for i := range 6 {
		if got := get(t, p.Addr(), "/name"); got == "b" {
			t.Fatalf("request %d answered by killed backend", i)
		}
	}
	st := backendState(p.Proxy, b.addr())
	if st.State != "DOWN" {
		t.Errorf("killed backend is %s, want DOWN after one refused connect", st.State)
	}
	if st.ConnectFailure != 1 {
		t.Errorf("killed backend saw %d connect failures, want exactly 1", st.ConnectFailure)
	}
	if r := p.Status().Retries; r != 1 {
		t.Errorf("retries = %d, want 1", r)
	}
}

func TestNoBackendUpRefusesAtOnce(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.status.Store(http.StatusServiceUnavailable)
	b.status.Store(http.StatusServiceUnavailable)
	cfg := testConfig(a, b)
	p := startProxy(t, cfg)
	waitState(t, p.Proxy, a.addr(), "DOWN")
	waitState(t, p.Proxy, b.addr(), "DOWN")

	assertRefused(t, p.Proxy, p.Addr())
}

// assertRefused opens a connection to addr and checks that the proxy refuses it with a reset,
// not a hang, and counts the refusal. The reset can arrive while the kernel is still completing
// the client's connect (then Dial fails with ECONNRESET) or after it (the first read fails):
// both are the refusal. The deadline only guards against a hang.
func assertRefused(t *testing.T, p *Proxy, addr net.Addr) {
	t.Helper()
	before := p.Status().Refused
	c, err := net.DialTimeout("tcp", addr.String(), 20*time.Second)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	var ne net.Error
	switch {
	case err == nil:
		t.Fatal("the connection was served, want it refused")
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("the connection hung (%v), want it reset", err)
	case !errors.Is(err, unix.ECONNRESET):
		t.Fatalf("the connection failed with %v, want a reset", err)
	}
	waitFor(t, "the refusal counted", 10*time.Second, func() bool { return p.Status().Refused > before })
}

func TestReloadKeepsEstablishedStream(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	cfg := testConfig(a, b)
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	s := openStream(t, p.Addr(), "every=20ms")
	s.line(t)
	keep := a
	if s.backend == "a" {
		keep = b
	}
	// Drop the stream's backend, keep the other, add c.
	specs := []BackendSpec{{Addr: keep.addr(), Weight: 1}, {Addr: c.addr(), Weight: 1}}
	if err := p.Reload(specs); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.Proxy, c.addr(), "UP")
	for range 4 {
		got := get(t, p.Addr(), "/name")
		if got == s.backend {
			t.Fatalf("request went to removed backend %s", got)
		}
	}
	for range 5 {
		if l := s.line(t); !strings.HasPrefix(l, "event") {
			t.Fatalf("stream line %q", l)
		}
	}
	var removed int
	for _, bs := range p.Status().Backends {
		if bs.State == "REMOVED" {
			removed++
			if bs.ActiveConns != 1 {
				t.Errorf("removed backend %s has %d sessions, want the stream's 1", bs.Addr, bs.ActiveConns)
			}
		}
	}
	if removed != 1 {
		t.Errorf("%d REMOVED backends in status, want 1", removed)
	}
}

// TestLongQuietStream holds a watch-like response that stays silent for 40 s, longer
// than the 20-35 s client/server timeouts of common haproxy configs for apiservers, with
// lbproxy's default idle timeouts.
func TestLongQuietStream(t *testing.T) {
	t.Parallel()
	if d := DefaultConfig(); d.ClientIdleTimeout < time.Minute || d.ServerIdleTimeout < time.Minute {
		t.Fatalf("default idle timeouts %v/%v, want well above client-go's 30 s ping", d.ClientIdleTimeout, d.ServerIdleTimeout)
	}
	a := newBackend(t, "a")
	p := startProxy(t, testConfig(a))
	waitAllUp(t, p.Proxy)
	s := openStream(t, p.Addr(), "silence=40s")
	l, err := s.next(time.Minute)
	if err != nil || l != "end" {
		t.Fatalf("after 40 s of silence: %q, %v; want end", l, err)
	}
}

func TestIdleTimeout(t *testing.T) {
	a := newBackend(t, "a")
	cfg := testConfig(a)
	cfg.ClientIdleTimeout = time.Second
	cfg.ServerIdleTimeout = time.Second
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	t.Run("activity keeps it open", func(t *testing.T) {
		s := openStream(t, p.Addr(), "every=100ms")
		for range 30 { // 3 s, three idle timeouts
			s.line(t)
		}
	})
	t.Run("silence closes it", func(t *testing.T) {
		s := openStream(t, p.Addr(), "silence=20s")
		l, err := s.next(15 * time.Second)
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("idle stream: %q, %v; want it closed by the proxy", l, err)
		}
	})
}

// echoBackend answers each connection, after the client half-closed, with the number of
// bytes it read; it checks that half-close passes through.
func echoBackend(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				_, _ = io.WriteString(c, "read "+itoa(int(n)))
			}()
		}
	}()
	return ln
}

func TestHalfClose(t *testing.T) {
	tests := []struct{ name, addr string }{
		{"IPv4", "127.0.0.1:0"},
		{"IPv6", "[::1]:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "IPv6" {
				ln, err := net.Listen("tcp", tt.addr)
				testenv.Require(t, err == nil, "IPv6 loopback")
				if ln != nil {
					ln.Close()
				}
			}
			testHalfClose(t, tt.addr)
		})
	}
}

func testHalfClose(t *testing.T, addr string) {
	ln := echoBackend(t, addr)
	cfg := testConfig()
	cfg.Listen = addr
	cfg.CheckMode = "tcp"
	cfg.Backends = []string{ln.Addr().String()}
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	payload := strings.Repeat("x", 1<<20)
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "read " + itoa(len(payload)); string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	waitFor(t, "byte counters", 10*time.Second, func() bool {
		st := backendState(p.Proxy, ln.Addr().String())
		return st.BytesIn == uint64(len(payload)) && st.BytesOut == uint64(len(got))
	})
}

func TestBackendMaxConnQueue(t *testing.T) {
	a := newBackend(t, "a")
	cfg := testConfig(a)
	cfg.BackendMaxConn = 1
	cfg.MaxQueue = 1
	cfg.QueueTimeout = 20 * time.Second
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	s := openStream(t, p.Addr(), "every=1h") // holds the only slot

	queued := make(chan string, 1)
	go func() {
		resp, err := client(p.Addr()).Get("https://lbproxy/name")
		if err != nil {
			queued <- "error: " + err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		queued <- string(body)
	}()
	waitFor(t, "one queued connection", 10*time.Second, func() bool { return p.Status().Queued == 1 })

	// The queue is full: the next client is refused.
	assertRefused(t, p.Proxy, p.Addr())
	if st := p.Status(); st.Queued != 1 {
		t.Errorf("after the refusal %d connections are queued, want the first one still there", st.Queued)
	}

	s.conn.Close() // frees the slot
	select {
	case got := <-queued:
		if got != "a" {
			t.Fatalf("queued request: %s", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("queued request never served")
	}
}

func TestStatusAndMetrics(t *testing.T) {
	a := newBackend(t, "a")
	cfg := testConfig(a)
	cfg.StatusAddr = "127.0.0.1:0"
	cfg.CheckCA = writeCA(t, a)
	cfg.CheckInsecure = false
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)
	get(t, p.Addr(), "/name")

	base := "http://" + p.StatusAddr().String()
	resp, err := http.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Backends) != 1 || st.Backends[0].State != "UP" || st.Backends[0].TotalConns != 1 || st.Backends[0].Check.Checks == 0 {
		t.Errorf("status: %+v", st)
	}

	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`lbproxy_backend_up{backend="` + a.addr() + `"} 1`,
		`lbproxy_backend_connections_total{backend="` + a.addr() + `"} 1`,
		`lbproxy_accepted_connections_total 1`,
		`hacp_cert_file_error{cert="check-ca",file="` + cfg.CheckCA + `"} 0`,
		`hacp_cert_expiry_seconds{cert="check-ca",file="` + cfg.CheckCA + `"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestDrain(t *testing.T) {
	a := newBackend(t, "a")
	cfg := testConfig(a)
	cfg.DrainTimeout = 500 * time.Millisecond
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)
	s := openStream(t, p.Addr(), "every=20ms")

	p.cancel() // what SIGTERM does
	waitFor(t, "listener closed", 10*time.Second, func() bool {
		c, err := net.Dial("tcp", p.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	// The open stream keeps flowing during the drain, then is closed at its end.
	s.line(t)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the drain timeout")
	}
	for {
		if _, err := s.next(10 * time.Second); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("stream still open after the drain")
			}
			break
		}
	}
}

func TestGlobalMaxConn(t *testing.T) {
	a := newBackend(t, "a")
	cfg := testConfig(a)
	cfg.MaxConn = 1
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)
	s := openStream(t, p.Addr(), "every=1h")

	// The second client completes its handshake in the kernel's backlog but is not
	// accepted while the first holds the only slot.
	got := make(chan string, 1)
	go func() {
		resp, err := client(p.Addr()).Get("https://lbproxy/name")
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(body)
	}()
	select {
	case g := <-got:
		t.Fatalf("second client served (%q) while maxconn=1 was taken", g)
	case <-time.After(300 * time.Millisecond):
	}
	if n := p.Status().Accepted; n != 1 {
		t.Fatalf("accepted %d connections with maxconn=1", n)
	}
	s.conn.Close()
	select {
	case g := <-got:
		if g != "a" {
			t.Fatalf("second client: %s", g)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("second client never served after the slot freed")
	}
}

// TestSocketOptions checks keepalive and TCP_USER_TIMEOUT on both sides of a session, and
// TCP_NODELAY, which the client side inherits from the listening socket.
func TestSocketOptions(t *testing.T) {
	a := newBackend(t, "a")
	cfg := testConfig(a)
	cfg.TCPUserTimeout = 7 * time.Second
	cfg.TCPKeepAlive = 12 * time.Second
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)
	openStream(t, p.Addr(), "every=1h")

	p.pool.mu.Lock()
	var sessions []*session
	for s := range p.pool.backends[0].sessions {
		sessions = append(sessions, s)
	}
	p.pool.mu.Unlock()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(sessions))
	}
	opts := []struct {
		name       string
		level, opt int
		want       int
	}{
		{"TCP_USER_TIMEOUT", unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 7000},
		{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 12},
		{"TCP_KEEPINTVL", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 4},
		{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 3},
		{"TCP_NODELAY", unix.IPPROTO_TCP, unix.TCP_NODELAY, 1},
	}
	// The client side inherits the options from the listening socket; the server side
	// gets them once the session has lasted optionsDelay.
	get := func(fd, level, opt int) int {
		v, err := unix.GetsockoptInt(fd, level, opt)
		if err != nil {
			t.Fatalf("getsockopt: %v", err)
		}
		return v
	}
	for side, fd := range map[string]int{"client": sessions[0].client.fd, "server": sessions[0].server.fd} {
		for _, o := range opts {
			waitFor(t, side+" side "+o.name, 20*time.Second, func() bool { return get(fd, o.level, o.opt) == o.want })
		}
	}
}

// TestDownSessionGrace: a backend whose check gets a 500 (alive, e.g. an apiserver in its
// shutdown delay) goes DOWN and gets no new connection, but with --down-session-grace its
// open sessions go on, and are closed once the grace has passed.
func TestDownSessionGrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{{"sessions go on during the grace", time.Hour}, {"sessions closed after the grace", 300 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			cfg := testConfig(a, b)
			cfg.DownSessionGrace = tc.grace
			p := startProxy(t, cfg)
			waitAllUp(t, p.Proxy)
			s := openStream(t, p.Addr(), "every=20ms")
			victim, other := a, b
			if s.backend == "b" {
				victim, other = b, a
			}
			victim.status.Store(http.StatusInternalServerError)
			waitState(t, p.Proxy, victim.addr(), "DOWN")
			for range 4 {
				if got := get(t, p.Addr(), "/name"); got != other.name {
					t.Fatalf("new request went to %s, want %s", got, other.name)
				}
			}
			if tc.grace == time.Hour {
				for range 10 {
					s.line(t)
				}
				return
			}
			for {
				_, err := s.next(20 * time.Second)
				if err == nil {
					continue
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("stream through the DOWN backend still open after the grace")
				}
				break
			}
		})
	}
}
