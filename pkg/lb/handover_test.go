package lb

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/internal/testenv"
)

// TestTransparentClientSockets: the listener, and so every client socket it accepts, is
// IP_TRANSPARENT, so that a response in flight can still leave after vipd has handed the VIP
// to another master (see handover.go and pkg/vip's TestMakeBeforeBreakHandover).
func TestTransparentClientSockets(t *testing.T) {
	testenv.RequireRoot(t) // CAP_NET_RAW
	for _, listen := range []string{"127.0.0.1:0", "[::]:0"} {
		t.Run(listen, func(t *testing.T) {
			a := newBackend(t, "a")
			cfg := testConfig(a)
			cfg.Listen = listen
			p := startProxy(t, cfg)
			waitAllUp(t, p.Proxy)
			port := p.Addr().(*net.TCPAddr).Port
			openStream(t, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, "every=1h")

			p.pool.mu.Lock()
			client := -1
			for s := range p.pool.backends[0].sessions {
				client = s.client.fd
			}
			p.pool.mu.Unlock()
			if client < 0 {
				t.Fatal("no session")
			}
			check := func(what string, fd int) {
				t.Helper()
				level, opt := unix.IPPROTO_IP, unix.IP_TRANSPARENT
				if sa, err := unix.Getsockname(fd); err == nil {
					if _, v6 := sa.(*unix.SockaddrInet6); v6 {
						level, opt = unix.IPPROTO_IPV6, unix.IPV6_TRANSPARENT
					}
				}
				v, err := unix.GetsockoptInt(fd, level, opt)
				if err != nil || v != 1 {
					t.Errorf("%s: transparent = %d (%v), want 1", what, v, err)
				}
			}
			lrc, err := p.ln.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			_ = lrc.Control(func(fd uintptr) { check("listener", int(fd)) })
			check("accepted client socket", client)
		})
	}
}
