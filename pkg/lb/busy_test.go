package lb

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gatedListener is a listener with an accept queue of one whose Accept can be paused:
// paused, the kernel's queue fills and further connects time out, as against an apiserver
// too busy to accept while it serves its open connections.
type gatedListener struct {
	net.Listener
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
}

func newGatedListener(t *testing.T) *gatedListener {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "gated")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	l := &gatedListener{Listener: ln}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// Close lets a paused Accept go on, to find the listener closed.
func (l *gatedListener) Close() error {
	l.pause(false)
	return l.Listener.Close()
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	l.mu.Lock()
	for l.paused {
		l.cond.Wait()
	}
	l.mu.Unlock()
	return c, err
}

func (l *gatedListener) pause(p bool) {
	l.mu.Lock()
	l.paused = p
	l.mu.Unlock()
	l.cond.Broadcast()
}

// fillAcceptQueue connects to addr until a connect times out: the paused listener's queue
// is full. The connections stay open until the test ends.
func fillAcceptQueue(t *testing.T, addr string) {
	t.Helper()
	for range 16 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("%s still accepts connects: its queue did not fill", addr)
}

// TestBusyBackendConnectTimeout: a connect that times out against a backend still sending
// on its other sessions (its accept queue full, as an apiserver's in a reconnect storm)
// does not mark it DOWN, which would close those sessions; the client is retried
// elsewhere. Once the backend has gone quiet, a timeout marks it DOWN as before.
func TestBusyBackendConnectTimeout(t *testing.T) {
	gl := newGatedListener(t)
	busy, other := newBackendOn(t, "busy", gl), newBackend(t, "other")
	cfg := testConfig(busy, other)
	cfg.CheckInterval = time.Hour // the passive rule is under test; a woken probe must not decide
	cfg.CheckFastInterval = time.Hour
	cfg.Fall = 100
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	var s *stream
	for s == nil || s.backend != "busy" {
		s = openStream(t, p.Addr(), "every=10ms")
		s.line(t)
	}
	var lines atomic.Int64
	streamDone := make(chan error, 1)
	go func() {
		for {
			if _, err := s.next(20 * time.Second); err != nil {
				streamDone <- err
				return
			}
			lines.Add(1)
		}
	}()

	gl.pause(true)
	fillAcceptQueue(t, busy.addr())
	for i := 0; backendState(p.Proxy, busy.addr()).ConnectFailure == 0; i++ {
		if i == 20 {
			t.Fatal("no connect to the busy backend timed out")
		}
		if got := get(t, p.Addr(), "/name"); got != "other" {
			t.Fatalf("request answered by %q, want other", got)
		}
	}
	st := backendState(p.Proxy, busy.addr())
	if st.State != "UP" || st.BusyTimeouts != st.ConnectFailure {
		t.Fatalf("busy backend after a connect timeout: state %s, %d busy timeouts of %d connect failures; want UP, all busy",
			st.State, st.BusyTimeouts, st.ConnectFailure)
	}
	before := lines.Load()
	waitFor(t, "the stream through the busy backend to go on", 20*time.Second, func() bool { return lines.Load() > before+3 })

	// Quiet: the stream ends, and a connect that times out now finds a backend that sent
	// nothing while it waited.
	s.conn.Close()
	<-streamDone
	waitFor(t, "the quiet backend DOWN", 20*time.Second, func() bool {
		if got := get(t, p.Addr(), "/name"); got != "other" {
			t.Fatalf("request answered by %q, want other", got)
		}
		return backendState(p.Proxy, busy.addr()).State == "DOWN"
	})
	st = backendState(p.Proxy, busy.addr())
	if st.ConnectFailure <= st.BusyTimeouts {
		t.Errorf("DOWN with %d connect failures, all %d busy: want one that was not", st.ConnectFailure, st.BusyTimeouts)
	}
}
