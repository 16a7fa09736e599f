package lb

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/config"
)

func newTestPool(slowStart time.Duration, weights ...int) *pool {
	p := &pool{slowStart: slowStart, maxQueue: 10}
	for i, w := range weights {
		p.backends = append(p.backends, &backend{addr: "b" + itoa(i), weight: w, up: true, sessions: map[*session]struct{}{}})
	}
	return p
}

// TestSlowStart picks 1000 times at points of a recovering backend's ramp: its share grows
// from 5% of its weight to all of it.
func TestSlowStart(t *testing.T) {
	p := newTestPool(10*time.Second, 1, 1)
	up := time.Now()
	p.backends[1].upSince = up
	tests := []struct {
		at       time.Duration
		min, max int // picks of the recovering backend out of 1000
	}{
		{0, 40, 60},                 // weight 0.05 against 1: 1000*0.05/1.05 = 48
		{5 * time.Second, 320, 350}, // 0.5 against 1: 333
		{10 * time.Second, 500, 500},
		{time.Hour, 500, 500},
	}
	for _, tt := range tests {
		t.Run(tt.at.String(), func(t *testing.T) {
			n := 0
			for range 1000 {
				b, _ := p.pickLocked(nil, up.Add(tt.at))
				if b == p.backends[1] {
					n++
				}
			}
			if n < tt.min || n > tt.max {
				t.Errorf("recovering backend got %d of 1000 picks, want %d-%d", n, tt.min, tt.max)
			}
		})
	}
}

func TestPickSkipsDownFullAndTried(t *testing.T) {
	p := newTestPool(0, 1, 1, 1)
	p.maxConn = 1
	p.backends[0].up = false
	p.backends[1].active = 1
	tried := map[*backend]bool{p.backends[2]: true}
	if b, full := p.pickLocked(tried, time.Now()); b != nil || !full {
		t.Fatalf("pick = %v, full %v; want none and full", b, full)
	}
	p.backends[1].active = 0
	if b, _ := p.pickLocked(tried, time.Now()); b != p.backends[1] {
		t.Fatalf("pick = %v, want b1", b)
	}
	p.backends[1].up = false
	if _, err := p.acquire(t.Context(), tried, time.Second); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("acquire with nothing UP: %v, want ErrNoBackend", err)
	}
}

func TestParseBackend(t *testing.T) {
	tests := []struct {
		in      string
		want    BackendSpec
		wantErr string
	}{
		{"10.0.0.1:6443", BackendSpec{"10.0.0.1:6443", 1}, ""},
		{"[fd00::1]:6443 weight=3", BackendSpec{"[fd00::1]:6443", 3}, ""},
		{"master-1.example:6443", BackendSpec{"master-1.example:6443", 1}, ""},
		{"10.0.0.1", BackendSpec{}, "want host:port"},
		{"fd00::1:6443", BackendSpec{}, "want host:port"},
		{":6443", BackendSpec{}, "missing host"},
		{"10.0.0.1:0", BackendSpec{}, "port must be 1-65535"},
		{"10.0.0.1:6443 weight=300", BackendSpec{}, "weight must be 1-256"},
		{"10.0.0.1:6443 backup", BackendSpec{}, "unknown option"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBackend(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		keys   []string
	}{
		{"defaults with a backend", func(c *Config) {}, nil},
		{"no backend", func(c *Config) { c.Backends = nil }, []string{"backend"}},
		{"duplicate", func(c *Config) { c.Backends = append(c.Backends, "10.0.0.1:6443") }, []string{"backend.1"}},
		{"several", func(c *Config) { c.Rise, c.Fall, c.CheckMode = 0, 0, "icmp" }, []string{"check-mode", "rise", "fall"}},
		{"relative check path", func(c *Config) { c.CheckPath = "healthz" }, []string{"check-path"}},
		{"tcp mode needs no path", func(c *Config) { c.CheckMode, c.CheckPath = "tcp", "" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Backends = []string{"10.0.0.1:6443"}
			tt.mutate(c)
			err := c.Validate()
			var got []string
			for _, e := range flattenJoined(err) {
				var fe *config.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("error %v is not a config.FieldError", e)
				}
				got = append(got, fe.Key)
			}
			if strings.Join(got, ",") != strings.Join(tt.keys, ",") {
				t.Fatalf("errors on %v, want %v (%v)", got, tt.keys, err)
			}
		})
	}
}

func flattenJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestQueueWakeupPassedOn: a waiter that gives up after being woken hands its wake-up to
// the next waiter instead of losing it.
func TestQueueWakeupPassedOn(t *testing.T) {
	p := newTestPool(0, 1)
	p.maxConn = 1
	b, err := p.acquire(t.Context(), nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := p.acquire(t.Context(), nil, time.Minute)
		second <- err
	}()
	waitFor(t, "one waiter", 10*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.queue.Len() == 1
	})
	// A first waiter that is woken and abandons at once, by hand.
	wake := make(chan struct{}, 1)
	p.mu.Lock()
	el := p.queue.PushFront(wake)
	b.active--
	p.wakeLocked(1)
	p.mu.Unlock()
	p.abandon(el, wake)
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wake-up was lost: second waiter still queued with a free slot")
	}
}

func TestBackendFault(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, true},
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, true},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.EMFILE)}, false},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := backendFault(tt.err); got != tt.want {
				t.Errorf("backendFault = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzParseBackend: any input is parsed or rejected without panicking, and what is
// accepted has a port and a weight in range.
func FuzzParseBackend(f *testing.F) {
	for _, s := range []string{"10.0.0.1:6443", "[fd00::1]:6443 weight=3", "m1:1 weight=256", ":1", "x", "a:b weight=1 weight=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBackend(s)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(b.Addr); err != nil {
			t.Fatalf("accepted %q with address %q: %v", s, b.Addr, err)
		}
		if b.Weight < 1 || b.Weight > 256 {
			t.Fatalf("accepted %q with weight %d", s, b.Weight)
		}
	})
}
