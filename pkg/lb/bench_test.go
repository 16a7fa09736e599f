package lb

import (
	"context"
	"io"
	"net"
	"runtime"
	"testing"
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
