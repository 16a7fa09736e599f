package vip

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/hacp/hacp/pkg/vrrp"
)

// advertConn is the raw IPv4 protocol-112 socket of one instance, bound to its interface.
// It writes whole IPv4 headers itself (TTL 255, TOS 0xc0 like keepalived) so that the
// source address is exactly the one the VRRPv3 pseudo-header checksum covers.
type advertConn struct {
	raw   *ipv4.RawConn
	pc    net.PacketConn
	ifi   *net.Interface
	group *net.IPAddr // nil in unicast mode
}

// received is one advert as it came off the wire.
type received struct {
	src, dst netip.Addr
	ttl      int
	payload  []byte
	at       time.Time
}

func listenAdverts(ifi *net.Interface, unicast bool) (*advertConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.BindToDevice(int(fd), ifi.Name)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), fmt.Sprintf("ip4:%d", vrrp.ProtocolNumber), "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("vip: open raw IP protocol %d socket on %s: %w", vrrp.ProtocolNumber, ifi.Name, err)
	}
	raw, err := ipv4.NewRawConn(pc)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("vip: raw socket on %s: %w", ifi.Name, err)
	}
	c := &advertConn{raw: raw, pc: pc, ifi: ifi}
	fail := func(what string, err error) (*advertConn, error) {
		pc.Close()
		return nil, fmt.Errorf("vip: %s on %s: %w", what, ifi.Name, err)
	}
	if err := raw.SetMulticastTTL(vrrp.TTL); err != nil {
		return fail("set multicast TTL", err)
	}
	if err := raw.SetMulticastLoopback(false); err != nil {
		return fail("turn multicast loopback off", err)
	}
	if err := raw.SetMulticastInterface(ifi); err != nil {
		return fail("set multicast interface", err)
	}
	if !unicast {
		c.group = &net.IPAddr{IP: vrrp.MulticastGroupV4.AsSlice()}
		if err := raw.JoinGroup(ifi, c.group); err != nil {
			return fail("join "+vrrp.MulticastGroupV4.String(), err)
		}
	}
	return c, nil
}

func (c *advertConn) Close() error { return c.pc.Close() }

// send writes one advert from src to dst.
func (c *advertConn) send(src, dst netip.Addr, payload []byte) error {
	h := &ipv4.Header{
		Version:  ipv4.Version,
		Len:      ipv4.HeaderLen,
		TOS:      0xc0, // internetwork control, as keepalived sends
		TotalLen: ipv4.HeaderLen + len(payload),
		TTL:      vrrp.TTL,
		Protocol: vrrp.ProtocolNumber,
		Src:      src.AsSlice(),
		Dst:      dst.AsSlice(),
	}
	if err := c.raw.WriteTo(h, payload, nil); err != nil {
		return fmt.Errorf("vip: send advert %s -> %s on %s: %w", src, dst, c.ifi.Name, err)
	}
	return nil
}

// recv reads one packet; it returns an error only when the socket is closed or broken.
func (c *advertConn) recv(buf []byte) (received, error) {
	h, p, _, err := c.raw.ReadFrom(buf)
	if err != nil {
		return received{}, err
	}
	src, _ := netip.AddrFromSlice(h.Src.To4())
	dst, _ := netip.AddrFromSlice(h.Dst.To4())
	return received{src: src, dst: dst, ttl: h.TTL, payload: p, at: time.Now()}, nil
}
