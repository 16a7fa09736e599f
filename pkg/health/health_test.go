package health

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// target is a TLS server whose /healthz answers the status held in code.
func target(t *testing.T) (*httptest.Server, *atomic.Int32, string) {
	t.Helper()
	var code atomic.Int32
	code.Store(http.StatusOK)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, &code, ca
}

func TestRiseFall(t *testing.T) {
	srv, code, ca := target(t)
	var flips []bool
	c, err := New(Config{URL: srv.URL + "/healthz", CAFile: ca, Interval: time.Hour, Timeout: 2 * time.Second, Rise: 2, Fall: 3},
		func(h bool, _ error) { flips = append(flips, h) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []struct {
		status int
		want   bool
	}{
		{200, true},  // first probe sets the state directly
		{500, true},  // 1 failure of 3
		{500, true},  // 2
		{200, true},  // success resets the streak
		{500, true},  // 1
		{500, true},  // 2
		{503, false}, // 3: down
		{200, false}, // 1 success of 2
		{500, false}, // failure resets
		{200, false}, // 1
		{200, true},  // 2: up
	}
	for i, s := range steps {
		code.Store(int32(s.status))
		_ = c.CheckNow(ctx)
		if got := c.Healthy(); got != s.want {
			t.Fatalf("step %d (status %d): healthy = %v, want %v", i, s.status, got, s.want)
		}
	}
	if want := []bool{true, false, true}; len(flips) != len(want) || flips[0] != want[0] || flips[1] != want[1] || flips[2] != want[2] {
		t.Fatalf("onChange calls = %v, want %v", flips, want)
	}
	st := c.Status()
	if st.Checks != uint64(len(steps)) || st.Failures != 6 {
		t.Fatalf("status counters = %d checks, %d failures; want %d, 6", st.Checks, st.Failures, len(steps))
	}
}

func TestTLSVerification(t *testing.T) {
	srv, _, ca := target(t)
	tests := []struct {
		name    string
		cfg     Config
		healthy bool
	}{
		{"trusted CA", Config{CAFile: ca}, true},
		{"unknown CA", Config{}, false},
		{"insecure", Config{Insecure: true}, true},
		{"wrong path", Config{CAFile: ca, URL: srv.URL + "/nope"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg.URL == "" {
				cfg.URL = srv.URL + "/healthz"
			}
			cfg.Interval, cfg.Timeout, cfg.Rise, cfg.Fall = time.Hour, 2*time.Second, 1, 1
			c, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckNow(context.Background())
			if (err == nil) != tt.healthy || c.Healthy() != tt.healthy {
				t.Fatalf("check err = %v, healthy = %v; want healthy %v", err, c.Healthy(), tt.healthy)
			}
		})
	}
}

func TestTCPAndPassiveFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c, err := New(Config{URL: "tcp://" + ln.Addr().String(), Interval: time.Hour, Timeout: time.Second, Rise: 2, Fall: 2, InitiallyHealthy: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckNow(context.Background()); err != nil || !c.Healthy() {
		t.Fatalf("tcp check of a listening port: %v", err)
	}
	c.ReportFailure(errors.New("connect timeout"))
	if c.Healthy() {
		t.Fatal("a passive failure did not mark the target down at once")
	}
	_ = c.CheckNow(context.Background())
	if c.Healthy() {
		t.Fatal("one success brought the target back; rise is 2")
	}
	_ = c.CheckNow(context.Background())
	if !c.Healthy() {
		t.Fatal("rise successes did not bring the target back")
	}
	ln.Close()
	_ = c.CheckNow(context.Background())
	_ = c.CheckNow(context.Background())
	if c.Healthy() {
		t.Fatal("closed port still healthy after fall failures")
	}
}

func TestRunLoop(t *testing.T) {
	srv, code, ca := target(t)
	code.Store(500)
	c, err := New(Config{URL: srv.URL + "/healthz", CAFile: ca, Interval: 20 * time.Millisecond, Timeout: time.Second, Rise: 2, Fall: 2, InitiallyHealthy: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	waitFor(t, func() bool { return !c.Healthy() })
	code.Store(200)
	waitFor(t, func() bool { return c.Healthy() })
	cancel()
	<-done
}

func TestBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no scheme":   {URL: "127.0.0.1:6443", Interval: time.Second, Timeout: time.Second, Rise: 1, Fall: 1},
		"ftp":         {URL: "ftp://x:1", Interval: time.Second, Timeout: time.Second, Rise: 1, Fall: 1},
		"no interval": {URL: "tcp://x:1", Timeout: time.Second, Rise: 1, Fall: 1},
		"zero rise":   {URL: "tcp://x:1", Interval: time.Second, Timeout: time.Second, Fall: 1},
		"missing CA":  {URL: "https://x:1", Interval: time.Second, Timeout: time.Second, Rise: 1, Fall: 1, CAFile: "/nonexistent"},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOutOfFilesIsNotAFailure checks that a probe that could not open a socket on this
// host leaves the target's state alone.
func TestOutOfFilesIsNotAFailure(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		c, err := New(Config{URL: "tcp://127.0.0.1:1", Interval: time.Hour, Timeout: time.Second, Rise: 1, Fall: 1, InitiallyHealthy: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.probe = func(context.Context) error {
			return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)}
		}
		if err := c.CheckNow(context.Background()); !errors.Is(err, errno) {
			t.Fatalf("CheckNow: %v, want %v", err, errno)
		}
		if st := c.Status(); !st.Healthy || st.Failures != 0 {
			t.Errorf("%v: status %+v; want healthy with no failure counted", errno, st)
		}
	}
}
