package vip

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// addrBinder adds and removes the virtual addresses of one instance with netlink. Addresses
// carry a valid lifetime that the daemon refreshes while master, so that a killed or hung
// vipd cannot leave them on the interface for good.
type addrBinder struct {
	iface      string
	label      string
	lifetime   time.Duration
	resetConns bool // abort the connections using an address before removing it
	log        *slog.Logger
}

func (b *addrBinder) link() (netlink.Link, error) {
	l, err := netlink.LinkByName(b.iface)
	if err != nil {
		return nil, fmt.Errorf("vip: interface %s: %w", b.iface, err)
	}
	return l, nil
}

func (b *addrBinder) nlAddr(p netip.Prefix) *netlink.Addr {
	secs := int((b.lifetime + time.Second - 1) / time.Second)
	a := &netlink.Addr{
		IPNet:       &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
		ValidLft:    secs,
		PreferedLft: secs,
	}
	if b.label != "" && p.Addr().Is4() {
		a.Label = b.label
	}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD // the address is ours the moment we are master
	}
	return a
}

// add binds (or re-binds with a fresh lifetime) every prefix.
func (b *addrBinder) add(ps []netip.Prefix) error { return b.replace(ps, false) }

// deprecate keeps every prefix bound, with a fresh valid lifetime, but marks it deprecated
// (preferred lifetime 0): a master that is handing over (LEAVING) still receives on it but
// gives it up, and anyone looking at the host (ip addr shows "deprecated") can tell it from
// a master that claims it.
func (b *addrBinder) deprecate(ps []netip.Prefix) error { return b.replace(ps, true) }

func (b *addrBinder) replace(ps []netip.Prefix, deprecated bool) error {
	l, err := b.link()
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ps {
		a := b.nlAddr(p)
		if deprecated {
			a.PreferedLft = 0
		}
		if err := netlink.AddrReplace(l, a); err != nil {
			errs = append(errs, fmt.Errorf("vip: add %s to %s: %w", p, b.iface, err))
		}
	}
	return errors.Join(errs...)
}

// remove resets the connections that use the prefixes (with resetConns) and unbinds them;
// addresses already gone are not an error.
func (b *addrBinder) remove(ps []netip.Prefix) error {
	if b.resetConns {
		// Before the address goes: afterwards the kernel could not send the resets from it
		// (except for transparent sockets, see release).
		b.reset(ps)
	}
	return b.unbind(ps)
}

// reset aborts the connections that use the prefixes, if resetConns.
func (b *addrBinder) reset(ps []netip.Prefix) {
	if !b.resetConns {
		return
	}
	n, err := resetConnections(ps)
	if err != nil {
		b.log.Warn("cannot reset connections to the virtual addresses", "err", err.Error())
	}
	if n > 0 {
		b.log.Info("reset connections to the virtual addresses", "count", n)
	}
}

// unbind removes the prefixes from the interface and nothing else. Connections that use
// them stay: their clients' packets now go to the new master, but what they send still
// leaves if their socket is transparent (IP_TRANSPARENT, as lbproxy's client sockets are),
// which lets a response in flight reach its client; a later reset reaches it the same way.
func (b *addrBinder) unbind(ps []netip.Prefix) error {
	l, err := b.link()
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ps {
		err := netlink.AddrDel(l, b.nlAddr(p))
		if err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("vip: remove %s from %s: %w", p, b.iface, err))
		}
	}
	return errors.Join(errs...)
}

// resetConnections aborts every TCP connection whose local address is an IPv4 address of ps
// (also those accepted by dual-stack listeners, which the kernel keeps as IPv6 sockets with
// v4-mapped addresses). The kernel answers each abort with a reset to the client, which then
// reconnects, through the VIP, to the new master: without it a client waiting for a response
// or holding a quiet watch would wait for its own timeout or keepalive. Listening sockets are
// left alone. It returns how many connections it aborted.
func resetConnections(ps []netip.Prefix) (int, error) {
	vips := map[netip.Addr]bool{}
	for _, p := range ps {
		if p.Addr().Is4() {
			vips[p.Addr()] = true
		}
	}
	if len(vips) == 0 {
		return 0, nil
	}
	var errs []error
	n := 0
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := netlink.SocketDiagTCP(family)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			errs = append(errs, fmt.Errorf("vip: list TCP sockets: %w", err))
			continue
		}
		for _, s := range socks {
			local, ok := netip.AddrFromSlice(s.ID.Source)
			if !ok || !vips[local.Unmap()] || s.State == tcpListen || s.State == tcpTimeWait || s.State == tcpClose {
				continue
			}
			remote, ok := netip.AddrFromSlice(s.ID.Destination)
			if !ok || !remote.Unmap().Is4() {
				continue
			}
			err := netlink.SocketDestroy(
				&net.TCPAddr{IP: local.Unmap().AsSlice(), Port: int(s.ID.SourcePort)},
				&net.TCPAddr{IP: remote.Unmap().AsSlice(), Port: int(s.ID.DestinationPort)})
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("vip: abort connection %s:%d -> %s:%d: %w", local.Unmap(), s.ID.SourcePort, remote.Unmap(), s.ID.DestinationPort, err))
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// TCP states as the kernel numbers them (include/net/tcp_states.h).
const (
	tcpTimeWait = 6
	tcpClose    = 7
	tcpListen   = 10
)

// primaryAddr returns the address adverts are sent from: the first IPv4 address of iface
// that is not a VIP, or for IPv6 its link-local address (RFC 5798 section 5.1.2.1).
func primaryAddr(iface string, ipv6 bool, vips []netip.Prefix) (netip.Addr, error) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, err)
	}
	family := netlink.FAMILY_V4
	if ipv6 {
		family = netlink.FAMILY_V6
	}
	addrs, err := netlink.AddrList(l, family)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("list addresses of %s: %w", iface, err)
	}
next:
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if ipv6 != ip.Is6() || (ipv6 && !ip.IsLinkLocalUnicast()) {
			continue
		}
		for _, v := range vips {
			if v.Addr() == ip {
				continue next
			}
		}
		return ip, nil
	}
	if ipv6 {
		return netip.Addr{}, fmt.Errorf("interface %s has no link-local IPv6 address to send adverts from", iface)
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address of its own to send adverts from", iface)
}
