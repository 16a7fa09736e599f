package vip

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/hacp/hacp/pkg/vrrp"
)

// advertConn is the raw IP protocol-112 socket of one instance, bound to its interface.
type advertConn interface {
	// send writes one advert from src to dst.
	send(src, dst netip.Addr, payload []byte) error
	// serve reads packets as they arrive, oldest first, handing each to put while room
	// says there is room for one more. It returns nil when room says no (call it again
	// once there is), or the error that broke or closed the socket.
	serve(room func() bool, put func(received)) error
	// readQueued reads what is queued on the socket now, as serve but without waiting.
	// It may run alongside serve: one of them reads at a time, so put sees every packet
	// once, in the order they came.
	readQueued(room func() bool, put func(received)) error
	Close() error
}

// received is one advert as it came off the wire.
type received struct {
	src, dst netip.Addr
	ttl      int // IPv4 TTL or IPv6 hop limit
	payload  []byte
	at       time.Time // when the kernel received it
	bad      bool      // no parsable IP header, or cut short by the buffer
}

// sockReader reads a raw socket with recvmsg(MSG_DONTWAIT) under a lock, so that a caller
// other than the reading goroutine (run's timer, see instance.readPending) can read what is
// queued without waiting for the Go scheduler to wake that goroutine.
type sockReader struct {
	rc    syscall.RawConn
	parse func(r *received, b, oob []byte, from unix.Sockaddr)

	mu       sync.Mutex
	buf, oob []byte
}

func newSockReader(c syscall.Conn, parse func(r *received, b, oob []byte, from unix.Sockaddr)) (*sockReader, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	// Kernel receive times: an advert read late (a loaded host) counts from its arrival.
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("ask for receive timestamps: %w", serr)
	}
	return &sockReader{rc: rc, parse: parse, buf: make([]byte, 1500), oob: make([]byte, 256)}, nil
}

// read reads fd until nothing is queued (more: true) or room says no (more: false).
func (s *sockReader) read(fd int, room func() bool, put func(received)) (more bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for room() {
		n, oobn, flags, from, err := unix.Recvmsg(fd, s.buf, s.oob, unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true, nil
		case err != nil:
			return false, os.NewSyscallError("recvmsg", err)
		}
		r := received{at: time.Now()}
		if ts, ok := timestamp(s.oob[:oobn]); ok {
			// As a time with a monotonic reading, which the state machine's timers need.
			if age := r.at.Sub(ts); age > 0 && age < time.Minute {
				r.at = r.at.Add(-age)
			}
		}
		s.parse(&r, s.buf[:n], s.oob[:oobn], from)
		r.bad = r.bad || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0
		put(r)
	}
	return false, nil
}

func (s *sockReader) serve(room func() bool, put func(received)) error {
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		var more bool
		more, rerr = s.read(int(fd), room, put)
		return !more || rerr != nil // false: wait until the socket is readable again
	})
	if err != nil {
		return err
	}
	return rerr
}

func (s *sockReader) readQueued(room func() bool, put func(received)) error {
	var rerr error
	if err := s.rc.Control(func(fd uintptr) { _, rerr = s.read(int(fd), room, put) }); err != nil {
		return err
	}
	return rerr
}

// timestamp is the SO_TIMESTAMPNS receive time among control messages oob.
func timestamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
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
	*sockReader
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
	if c.sockReader, err = newSockReader(pc.(syscall.Conn), parse4); err != nil {
		return fail("set up reading", err)
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

// parse4 reads a packet of the IPv4 raw socket, which comes with its IP header.
func parse4(r *received, b, _ []byte, _ unix.Sockaddr) {
	h, err := ipv4.ParseHeader(b)
	if err != nil || h.Len > len(b) {
		r.bad = true
		return
	}
	r.src, _ = netip.AddrFromSlice(h.Src.To4())
	r.dst, _ = netip.AddrFromSlice(h.Dst.To4())
	r.ttl, r.payload = h.TTL, b[h.Len:]
}

// advertConn6 sends VRRPv3 over IPv6 with hop limit 255 from the link-local address; the
// kernel builds the IPv6 header, the checksum is ours.
type advertConn6 struct {
	*sockReader
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
	if c.sockReader, err = newSockReader(raw.(syscall.Conn), parse6); err != nil {
		return fail("set up reading", err)
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

// parse6 reads a packet of the IPv6 raw socket: the payload, with the hop limit and the
// destination in control messages (IPV6_RECVHOPLIMIT, IPV6_RECVPKTINFO).
func parse6(r *received, b, oob []byte, from unix.Sockaddr) {
	r.payload = b
	if sa, ok := from.(*unix.SockaddrInet6); ok {
		r.src = netip.AddrFrom16(sa.Addr)
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		r.bad = true
		return
	}
	for _, m := range msgs {
		if m.Header.Level != unix.IPPROTO_IPV6 {
			continue
		}
		switch {
		case m.Header.Type == unix.IPV6_HOPLIMIT && len(m.Data) >= 4:
			r.ttl = int(binary.NativeEndian.Uint32(m.Data))
		case m.Header.Type == unix.IPV6_PKTINFO && len(m.Data) >= unix.SizeofInet6Pktinfo:
			r.dst = netip.AddrFrom16([16]byte(m.Data[:16]))
		}
	}
}

// permHint explains a permission error.
func permHint(err error) string {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		return " (vipd needs root, or CAP_NET_RAW and CAP_NET_ADMIN)"
	}
	return ""
}
