package vip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/hacp/hacp/pkg/vrrp"
)

// advertConn is the raw IP protocol-112 socket of one instance, bound to its interface.
type advertConn interface {
	// send writes one advert from src to dst.
	send(src, dst netip.Addr, payload []byte) error
	// recv reads one packet; it fails only when the socket is closed or broken.
	recv(buf []byte) (received, error)
	Close() error
}

// received is one advert as it came off the wire.
type received struct {
	src, dst netip.Addr
	ttl      int // IPv4 TTL or IPv6 hop limit
	payload  []byte
	at       time.Time
}

func bindToDevice(ifname string) net.ListenConfig {
	return net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.BindToDevice(int(fd), ifname) }); err != nil {
			return err
		}
		return serr
	}}
}

func listenAdverts(ifi *net.Interface, ipv6 bool, unicast bool) (advertConn, error) {
	if ipv6 {
		return listenAdverts6(ifi, unicast)
	}
	return listenAdverts4(ifi, unicast)
}

// advertConn4 writes whole IPv4 headers itself (TTL 255, TOS 0xc0 like keepalived) so that
// the source address is exactly the one the VRRPv3 pseudo-header checksum covers.
type advertConn4 struct {
	raw *ipv4.RawConn
	pc  net.PacketConn
	ifi *net.Interface
}

func listenAdverts4(ifi *net.Interface, unicast bool) (*advertConn4, error) {
	lc := bindToDevice(ifi.Name)
	pc, err := lc.ListenPacket(context.Background(), fmt.Sprintf("ip4:%d", vrrp.ProtocolNumber), "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("vip: open raw IP protocol %d socket on %s: %w%s", vrrp.ProtocolNumber, ifi.Name, err, permHint(err))
	}
	raw, err := ipv4.NewRawConn(pc)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("vip: raw socket on %s: %w", ifi.Name, err)
	}
	c := &advertConn4{raw: raw, pc: pc, ifi: ifi}
	fail := func(what string, err error) (*advertConn4, error) {
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
		if err := raw.JoinGroup(ifi, &net.IPAddr{IP: vrrp.MulticastGroupV4.AsSlice()}); err != nil {
			return fail("join "+vrrp.MulticastGroupV4.String(), err)
		}
	}
	return c, nil
}

func (c *advertConn4) Close() error { return c.pc.Close() }

func (c *advertConn4) send(src, dst netip.Addr, payload []byte) error {
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

func (c *advertConn4) recv(buf []byte) (received, error) {
	h, p, _, err := c.raw.ReadFrom(buf)
	if err != nil {
		return received{}, err
	}
	src, _ := netip.AddrFromSlice(h.Src.To4())
	dst, _ := netip.AddrFromSlice(h.Dst.To4())
	return received{src: src, dst: dst, ttl: h.TTL, payload: p, at: time.Now()}, nil
}

// advertConn6 sends VRRPv3 over IPv6 with hop limit 255 from the link-local address; the
// kernel builds the IPv6 header, the checksum is ours.
type advertConn6 struct {
	pc  *ipv6.PacketConn
	raw net.PacketConn
	ifi *net.Interface
}

func listenAdverts6(ifi *net.Interface, unicast bool) (*advertConn6, error) {
	lc := bindToDevice(ifi.Name)
	raw, err := lc.ListenPacket(context.Background(), fmt.Sprintf("ip6:%d", vrrp.ProtocolNumber), "::")
	if err != nil {
		return nil, fmt.Errorf("vip: open raw IPv6 protocol %d socket on %s: %w%s", vrrp.ProtocolNumber, ifi.Name, err, permHint(err))
	}
	pc := ipv6.NewPacketConn(raw)
	c := &advertConn6{pc: pc, raw: raw, ifi: ifi}
	fail := func(what string, err error) (*advertConn6, error) {
		raw.Close()
		return nil, fmt.Errorf("vip: %s on %s: %w", what, ifi.Name, err)
	}
	if err := pc.SetMulticastHopLimit(vrrp.TTL); err != nil {
		return fail("set multicast hop limit", err)
	}
	if err := pc.SetHopLimit(vrrp.TTL); err != nil {
		return fail("set hop limit", err)
	}
	if err := pc.SetMulticastLoopback(false); err != nil {
		return fail("turn multicast loopback off", err)
	}
	if err := pc.SetMulticastInterface(ifi); err != nil {
		return fail("set multicast interface", err)
	}
	if err := pc.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagDst, true); err != nil {
		return fail("ask for hop limit and destination", err)
	}
	if !unicast {
		if err := pc.JoinGroup(ifi, &net.IPAddr{IP: vrrp.MulticastGroupV6.AsSlice()}); err != nil {
			return fail("join "+vrrp.MulticastGroupV6.String(), err)
		}
	}
	return c, nil
}

func (c *advertConn6) Close() error { return c.raw.Close() }

func (c *advertConn6) send(src, dst netip.Addr, payload []byte) error {
	cm := &ipv6.ControlMessage{HopLimit: vrrp.TTL, Src: src.AsSlice(), IfIndex: c.ifi.Index}
	to := &net.IPAddr{IP: dst.AsSlice()}
	if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() {
		to.Zone = c.ifi.Name
	}
	if _, err := c.pc.WriteTo(payload, cm, to); err != nil {
		return fmt.Errorf("vip: send advert %s -> %s on %s: %w", src, dst, c.ifi.Name, err)
	}
	return nil
}

func (c *advertConn6) recv(buf []byte) (received, error) {
	n, cm, from, err := c.pc.ReadFrom(buf)
	if err != nil {
		return received{}, err
	}
	r := received{payload: buf[:n], at: time.Now()}
	if a, ok := from.(*net.IPAddr); ok {
		r.src, _ = netip.AddrFromSlice(a.IP)
	}
	if cm != nil {
		r.ttl = cm.HopLimit
		r.dst, _ = netip.AddrFromSlice(cm.Dst)
	}
	return r, nil
}

// permHint explains a permission error.
func permHint(err error) string {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return " (vipd needs root, or CAP_NET_RAW and CAP_NET_ADMIN)"
	}
	return ""
}
