package lb

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// nameBackend is a plain TCP backend that writes its name and a newline on every
// connection, then echoes what it reads. Closing its listener fails the proxy's tcp
// health checks while the connections it accepted stay open.
type nameBackend struct {
	name string
	ln   net.Listener
	mu   sync.Mutex
	conn []net.Conn
}

func newNameBackend(t *testing.T, name string) *nameBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &nameBackend{name: name, ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conn = append(b.conn, c)
			b.mu.Unlock()
			go func() {
				if _, err := io.WriteString(c, name+"\n"); err == nil {
					_, _ = io.Copy(c, c)
				}
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conn {
			c.Close()
		}
	})
	return b
}

// idleClient is a client connection through the proxy that knows its backend and
// notices when the proxy closes it.
type idleClient struct {
	c       net.Conn
	r       *bufio.Reader
	backend string
	echoes  atomic.Int64  // bytes read after the name
	closed  chan struct{} // closed when a read saw the end of the connection
}

// TestBackendDownClosesIdleSessions holds thousands of idle sessions on one backend and a
// few hundred on another, fails the first one's health checks, and checks that every
// session on it is closed by the proxy while those on the other backend keep working.
// It reports how long the closing took; make bench is where speed is judged.
func TestBackendDownClosesIdleSessions(t *testing.T) {
	const sessions = 2500 // four descriptors each in this process: client, proxy twice, backend
	a, b := newNameBackend(t, "a"), newNameBackend(t, "b")
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.CheckMode = "tcp"
	cfg.CheckInterval = 100 * time.Millisecond
	cfg.CheckFastInterval = 50 * time.Millisecond
	cfg.CheckTimeout = 5 * time.Second    // generous: the machine is loaded, and a
	cfg.ConnectTimeout = 10 * time.Second // backend marked DOWN by a slow accept fails the test
	cfg.DrainTimeout = 5 * time.Second
	cfg.Backends = []string{a.ln.Addr().String() + " weight=4", b.ln.Addr().String()}
	cfg.MaxConn = 2 * sessions
	p := startProxy(t, cfg)
	waitAllUp(t, p.Proxy)

	clients := make([]*idleClient, sessions)
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < sessions; i += 16 {
				c, err := openIdleClient(p.Addr())
				if err != nil {
					select {
					case errc <- err:
					default:
					}
					return
				}
				clients[i] = c
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range clients {
			if c != nil {
				c.c.Close()
			}
		}
	})
	select {
	case err := <-errc:
		t.Fatalf("open session: %v", err)
	default:
	}
	var onA, onB []*idleClient
	for _, c := range clients {
		if c.backend == "a" {
			onA = append(onA, c)
		} else {
			onB = append(onB, c)
		}
	}
	if len(onA) < sessions/2 || len(onB) == 0 {
		t.Fatalf("sessions on a: %d, on b: %d; want most on a and some on b", len(onA), len(onB))
	}

	// A few more sessions on b do round trips all along.
	stop := make(chan struct{})
	busyErr := make(chan error, 4)
	var busy sync.WaitGroup
	for range 4 {
		bc, err := openIdleClient(p.Addr())
		for err == nil && bc.backend != "b" {
			bc.c.Close()
			bc, err = openIdleClient(p.Addr())
		}
		if err != nil {
			t.Fatal(err)
		}
		busy.Add(1)
		go func() {
			defer busy.Done()
			defer bc.c.Close()
			busyErr <- roundTrips(bc, stop)
		}()
	}
	// Watch every idle session for echoes and for its end.
	var closedA, closedB atomic.Int64
	for _, c := range clients {
		go func() {
			for {
				if _, err := c.r.ReadByte(); err != nil {
					break
				}
				c.echoes.Add(1)
			}
			close(c.closed)
			if c.backend == "a" {
				closedA.Add(1)
			} else {
				closedB.Add(1)
			}
		}()
	}

	a.ln.Close() // its checks fail; its sessions stay open on its side
	waitState(t, p.Proxy, a.ln.Addr().String(), "DOWN")
	down := time.Now()
	waitFor(t, "every session on a closed", 30*time.Second, func() bool { return closedA.Load() == int64(len(onA)) })
	took := time.Since(down)
	close(stop)
	busy.Wait()
	close(busyErr)
	for err := range busyErr {
		if err != nil {
			t.Errorf("round trips on b while a went DOWN: %v", err)
		}
	}
	t.Logf("%d sessions on a closed within %v of a seen DOWN (%d idle on b)", len(onA), took.Round(time.Millisecond), len(onB))

	// Every idle session on b is open and still moves bytes both ways.
	for _, c := range onB {
		if _, err := io.WriteString(c.c, "x"); err != nil {
			t.Fatalf("write on a session on b: %v", err)
		}
	}
	waitFor(t, "an echo on every session on b", 30*time.Second, func() bool {
		for _, c := range onB {
			if c.echoes.Load() != 1 {
				return false
			}
		}
		return true
	})
	if n := closedB.Load(); n != 0 {
		t.Errorf("%d sessions on b closed", n)
	}
	if st := backendState(p.Proxy, a.ln.Addr().String()); st.ActiveConns != 0 {
		t.Errorf("a still has %d active sessions", st.ActiveConns)
	}
}

func openIdleClient(proxy net.Addr) (*idleClient, error) {
	c, err := net.DialTimeout("tcp", proxy.String(), 20*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Time{})
	return &idleClient{c: c, r: r, backend: name[:len(name)-1], closed: make(chan struct{})}, nil
}

// roundTrips echoes one byte at a time through c until stop.
func roundTrips(c *idleClient, stop <-chan struct{}) error {
	buf := []byte{'p'}
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		_ = c.c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.c.Write(buf); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return err
		}
	}
}
