package bfd

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
)

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// peerEnd is an endpoint in a host with one session, and the transitions it reported.
type peerEnd struct {
	e       *Endpoint
	s       *Session
	changes chan string
}

func startEnd(t *testing.T, h *netns.Host, peer netip.Addr) *peerEnd {
	t.Helper()
	pe := &peerEnd{changes: make(chan string, 64)}
	pe.e = NewEndpoint(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		func(c Change) {
			select { // never block the session
			case pe.changes <- c.From.String() + "->" + c.To.String() + ":" + c.Diag.String():
			default:
			}
		})
	t.Cleanup(pe.e.Close)
	if err := h.Do(func() (err error) {
		pe.s, err = pe.e.Add(context.Background(), SessionConfig{Peer: peer, Timers: fast})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return pe
}

// waitChange waits for the transition want (skipping others).
func (pe *peerEnd) waitChange(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-pe.changes:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("no transition %s; session %+v, drops %v", want, pe.s.Status(), pe.e.Drops())
		}
	}
}

// TestEndpoints runs two endpoints against each other in two network namespaces, over IPv4
// and IPv6: the sessions come Up (three-way handshake, then the fast interval after the
// poll sequence); a cut link takes both Down by detection timeout and they come back; a
// packet sent with TTL 254 and a malformed one are dropped and counted; closing one side
// tells the other (AdminDown: neighbor signaled session down).
func TestEndpoints(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip")
	n := netns.New(t, "bf-", "10.77.61")
	a, b := n.AddHost("a", 1), n.AddHost("b", 2)
	for _, family := range []string{"ipv4", "ipv6"} {
		t.Run(family, func(t *testing.T) {
			pa, pb := a.Addr, b.Addr
			if family == "ipv6" {
				pa, pb = netip.MustParseAddr("fd77:61::1"), netip.MustParseAddr("fd77:61::2")
				a.Run("ip", "-6", "addr", "replace", pa.String()+"/64", "dev", a.Iface, "nodad")
				b.Run("ip", "-6", "addr", "replace", pb.String()+"/64", "dev", b.Iface, "nodad")
			}
			ea, eb := startEnd(t, a, pb), startEnd(t, b, pa)
			for _, pe := range []*peerEnd{ea, eb} {
				waitFor(t, 30*time.Second, "Up, at the fast interval after the poll sequence", func() bool {
					st := pe.s.Status()
					return st.State == "Up" && st.TxInterval == 0.1 && st.DetectTime == 0.3 && st.RemoteDiscr != 0
				})
			}

			b.SetLink(false)
			ea.waitChange(t, "Up->Down:control detection time expired")
			eb.waitChange(t, "Up->Down:control detection time expired")
			b.SetLink(true)
			waitFor(t, 30*time.Second, "Up again", func() bool { return ea.s.Status().State == "Up" })
			if st := ea.s.Status(); st.Flaps != 1 || st.PacketsIn == 0 || st.PacketsOut == 0 {
				t.Errorf("status after a flap: %+v", st)
			}

			if family == "ipv4" {
				sendRaw(t, b, pa, 254, mustHex(t, frrDown))
				waitFor(t, 10*time.Second, "a TTL 254 packet counted as dropped", func() bool { return ea.e.Drops()[DropTTL] == 1 })
				sendRaw(t, b, pa, 255, []byte{0x20, 0x40, 3})
				waitFor(t, 10*time.Second, "a malformed packet counted as dropped", func() bool { return ea.e.Drops()[DropMalformed] == 1 })
				sendRaw(t, b, pa, 255, []byte("\x20\xc0\x03\x18\x00\x00\x00\x07\x00\x00\x00\x09\x00\x01\x86\xa0\x00\x01\x86\xa0\x00\x00\x00\x00"))
				waitFor(t, 10*time.Second, "a packet for an unknown discriminator counted as dropped", func() bool { return ea.e.Drops()[DropNoSession] == 1 })
			}

			eb.e.Close()
			ea.waitChange(t, "Up->Down:neighbor signaled session down")
			ea.e.Close()
		})
	}
}

// sendRaw sends payload from h to peer's BFD port with the given TTL, from a port of the
// session range (as a BFD peer would, but for the TTL).
func sendRaw(t *testing.T, h *netns.Host, peer netip.Addr, ttl int, payload []byte) {
	t.Helper()
	if err := h.Do(func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(peer, Port)))
		if err != nil {
			return err
		}
		defer c.Close()
		if err := ipv4.NewConn(c).SetTTL(ttl); err != nil {
			return err
		}
		_, err = c.Write(payload)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
