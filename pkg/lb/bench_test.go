package lb

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

// BenchmarkShortConnection is one client connection through the proxy with a 64-byte
// request and response; for profiling (make bench has the comparison with haproxy).
func BenchmarkShortConnection(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				if _, err := io.ReadFull(c, buf); err == nil {
					_, _ = c.Write(buf)
				}
			}()
		}
	}()
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.CheckMode = "tcp"
	cfg.Backends = []string{ln.Addr().String()}
	p, err := New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Listen(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	for !p.pool.anyUp() {
		runtime.Gosched()
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := net.Dial("tcp", p.Addr().String())
			if err != nil {
				b.Error(err)
				return
			}
			buf := make([]byte, 64)
			_, _ = c.Write(buf)
			_, err = io.ReadFull(c, buf)
			c.Close()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkIdleSessions opens b.N sessions through the proxy, each after one 64-byte
// round trip, and reports what an idle session costs the process: goroutines, stack
// and heap bytes, and file descriptors. Run it with -benchtime=2000x: everything (clients,
// proxy, backend) is in this process, which needs several descriptors per session.
func BenchmarkIdleSessions(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	// The backend echoes one 64-byte message per connection and keeps the connection
	// without a goroutine; health checks send nothing and are closed.
	var backendConns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64)
				if _, err := io.ReadFull(c, buf); err != nil {
					c.Close()
					return
				}
				mu.Lock()
				backendConns = append(backendConns, c)
				mu.Unlock()
				_, _ = c.Write(buf)
			}()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range backendConns {
			c.Close()
		}
	}()
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.CheckMode = "tcp"
	cfg.Backends = []string{ln.Addr().String()}
	p, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Listen(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	for !p.pool.anyUp() {
		runtime.Gosched()
	}

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	g0, fd0 := runtime.NumGoroutine(), openFDs()
	clients := make([]net.Conn, 0, b.N)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	msg := make([]byte, 64)
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", p.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for p.nActive.Load() != int64(b.N) {
		runtime.Gosched()
	}
	// Let the backend's goroutines end and the proxy's setup goroutines park.
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	n := float64(b.N)
	// Clients and backend ends in this process: two goroutine-free conns per session.
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/session")
	b.ReportMetric(float64(int64(m1.StackInuse)-int64(m0.StackInuse))/n, "stack-B/session")
	b.ReportMetric(float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/n, "heap-B/session")
	b.ReportMetric(float64(openFDs()-fd0)/n-2, "proxy-fds/session")
	if f := os.Getenv("LB_HEAP_PROFILE"); f != "" {
		writeProfiles(b, f)
	}
}

func openFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

func writeProfiles(b *testing.B, prefix string) {
	for _, name := range []string{"heap", "goroutine"} {
		f, err := os.Create(prefix + "." + name)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
