package netns

import (
	"flag"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// envRerunAddr tells a test binary started by RerunInHost that it is the run inside the
// host, and the host's address.
const envRerunAddr = "HACP_NETNS_RERUN_ADDR"

// RerunInHost runs the calling top-level test again, alone, in its own test binary inside a
// new host namespace (prefix+"h" at subnet.2 on a bridge), for a test whose whole process
// must sit in a namespace: an in-process server that dials addresses of 10.77.0.0/16, which
// the machine's own namespace must not route. In that run it returns the host's address and
// true. In the calling run it waits for that run, fails (or skips) as it did, and returns
// false: the test then returns at once. The host has no way out: what the test must fetch
// or build from the network, it prepares before.
func RerunInHost(t *testing.T, prefix, subnet string) (netip.Addr, bool) {
	t.Helper()
	if a := os.Getenv(envRerunAddr); a != "" {
		addr, err := netip.ParseAddr(a)
		if err != nil {
			t.Fatalf("netns: %s=%q: %v", envRerunAddr, a, err)
		}
		return addr, true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := New(t, prefix, subnet).AddHost("h", 2)
	args := []string{"-test.run=^" + t.Name() + "$", "-test.count=1", "-test.v"}
	if f := flag.Lookup("test.timeout"); f != nil {
		args = append(args, "-test.timeout="+f.Value.String())
	}
	cmd := h.Command(t.Context(), exe, args...)
	cmd.Env = append(os.Environ(), envRerunAddr+"="+h.Addr.String())
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "--- SKIP: "+t.Name()+" "):
		t.Skipf("skipped in host %s:\n%s", h.NS, out)
	case err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
		t.Fatalf("in host %s (%s): %v:\n%s", h.NS, h.Addr, err, out)
	}
	t.Logf("passed in host %s (%s)", h.NS, h.Addr)
	return netip.Addr{}, false
}

// ForwardTCP listens on addr (a port of its choosing) and relays every connection to target,
// until the test ends; it returns the port. A test server on loopback is reached so at an
// address an Endpoints object may hold (never loopback).
func ForwardTCP(t testing.TB, addr netip.Addr, target string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Go(func() { relay(c, target, track) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// relay copies between c and a new connection to target both ways, until either side ends.
func relay(c net.Conn, target string, track func(net.Conn)) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		return
	}
	track(up)
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
