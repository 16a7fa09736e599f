package vrrp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// ProtocolNumber is the IP protocol number of VRRP.
const ProtocolNumber = 112

// TypeAdvertisement is the only VRRP packet type.
const TypeAdvertisement = 1

// AuthType values of VRRPv2 (RFC 3768 section 5.3.6). keepalived speaks none and simple
// text passwords; RFC 3768 removed IP Authentication Header.
const (
	AuthNone   = 0
	AuthSimple = 1
)

// Multicast groups of VRRP (RFC 5798 section 5.1.1.2 and 5.1.2.2).
var (
	MulticastGroupV4 = netip.MustParseAddr("224.0.0.18")
	MulticastGroupV6 = netip.MustParseAddr("ff02::12")
)

// TTL is the IPv4 TTL or IPv6 hop limit every advert is sent with and must arrive with.
const TTL = 255

// Sentinel errors of Decode; callers count drops by them.
var (
	ErrShort        = errors.New("vrrp: packet too short")
	ErrVersion      = errors.New("vrrp: unsupported version")
	ErrType         = errors.New("vrrp: not an advertisement")
	ErrLength       = errors.New("vrrp: length does not match address count")
	ErrBadChecksum  = errors.New("vrrp: bad checksum")
	ErrAddrFamily   = errors.New("vrrp: addresses of mixed or unknown family")
	ErrTTL          = errors.New("vrrp: IP TTL is not 255")
	ErrInterval     = errors.New("vrrp: advert interval out of range")
	ErrTooManyAddrs = errors.New("vrrp: too many addresses")
)

// ChecksumMode says what the VRRPv3 checksum covers. VRRPv2 always sums the message only.
type ChecksumMode uint8

const (
	// ChecksumPseudoHeader sums an IP pseudo-header (source, destination, protocol,
	// length) and the message, as RFC 5798 section 5.2.8 says and keepalived does. For
	// unicast adverts the destination is the peer's address.
	ChecksumPseudoHeader ChecksumMode = iota
	// ChecksumMessageOnly sums the VRRP message without a pseudo-header for IPv4, the way
	// some vendor implementations of VRRPv3 do (the interoperability note of RFC 9568
	// section 5.2.8). IPv6 always uses the pseudo-header.
	ChecksumMessageOnly
)

func (m ChecksumMode) String() string {
	switch m {
	case ChecksumPseudoHeader:
		return "pseudo-header"
	case ChecksumMessageOnly:
		return "message-only"
	}
	return fmt.Sprintf("ChecksumMode(%d)", uint8(m))
}

// ParseChecksumMode parses the names String returns.
func ParseChecksumMode(s string) (ChecksumMode, error) {
	switch s {
	case "pseudo-header", "":
		return ChecksumPseudoHeader, nil
	case "message-only":
		return ChecksumMessageOnly, nil
	}
	return 0, fmt.Errorf("unknown checksum mode %q (want pseudo-header or message-only)", s)
}

// Packet is a VRRP advertisement, version 2 (RFC 3768) or 3 (RFC 5798 / RFC 9568).
type Packet struct {
	// Version is the VRRP version, 2 or 3.
	Version uint8
	// Type is the packet type; always TypeAdvertisement.
	Type uint8
	// VRID is the Virtual Rtr ID, 1-255.
	VRID uint8
	// Priority of the sender: 255 owns the addresses, 0 means "the master is leaving".
	Priority uint8
	// AuthType is the VRRPv2 Auth Type (AuthNone or AuthSimple); zero in VRRPv3.
	AuthType uint8
	// MaxAdvertInt is the (Max) Advertisement Interval: centiseconds (12 bits) in VRRPv3,
	// seconds (8 bits) in VRRPv2.
	MaxAdvertInt uint16
	// Checksum as read from the wire, or as computed by Encode.
	Checksum uint16
	// Addrs are the virtual addresses, all IPv4 or (VRRPv3 only) all IPv6.
	Addrs []netip.Addr
	// AuthData is the VRRPv2 Authentication Data: the simple-text password, zero padded.
	AuthData [8]byte
}

// Interval returns MaxAdvertInt as a duration.
func (p *Packet) Interval() time.Duration {
	if p.Version == 2 {
		return time.Duration(p.MaxAdvertInt) * time.Second
	}
	return time.Duration(p.MaxAdvertInt) * 10 * time.Millisecond
}

// SetInterval sets MaxAdvertInt from d, rounded to the unit of p.Version; it fails if d
// does not fit (VRRPv3: 10 ms to 40.95 s, VRRPv2: 1 s to 255 s).
func (p *Packet) SetInterval(d time.Duration) error {
	v, err := IntervalUnits(p.Version, d)
	if err != nil {
		return err
	}
	p.MaxAdvertInt = v
	return nil
}

// IntervalUnits converts d to the advert interval field of version.
func IntervalUnits(version uint8, d time.Duration) (uint16, error) {
	switch version {
	case 2:
		s := (d + time.Second/2) / time.Second
		if s < 1 || s > 255 || d%time.Second != 0 {
			return 0, fmt.Errorf("%w: VRRPv2 needs whole seconds 1s-255s, got %s", ErrInterval, d)
		}
		return uint16(s), nil
	case 3:
		cs := d / (10 * time.Millisecond)
		if cs < 1 || cs > 0xfff || d%(10*time.Millisecond) != 0 {
			return 0, fmt.Errorf("%w: VRRPv3 needs multiples of 10ms, 10ms-40.95s, got %s", ErrInterval, d)
		}
		return uint16(cs), nil
	}
	return 0, ErrVersion
}

// SetPassword sets a VRRPv2 simple-text password (at most 8 bytes, keepalived truncates
// longer ones the same way).
func (p *Packet) SetPassword(pass string) {
	p.AuthData = [8]byte{}
	if pass == "" {
		p.AuthType = AuthNone
		return
	}
	p.AuthType = AuthSimple
	copy(p.AuthData[:], pass)
}

const headerLen = 8

func (p *Packet) family() (is6 bool, err error) {
	for i, a := range p.Addrs {
		if !a.IsValid() || (a.Is4() != p.Addrs[0].Is4()) {
			return false, ErrAddrFamily
		}
		if i == 0 {
			is6 = !a.Is4()
		}
	}
	return is6, nil
}

// MarshalBinary encodes p as it stands, with p.Checksum as given. Use Encode to have the
// checksum computed.
func (p *Packet) MarshalBinary() ([]byte, error) {
	if p.Version != 2 && p.Version != 3 {
		return nil, ErrVersion
	}
	if len(p.Addrs) > 255 {
		return nil, ErrTooManyAddrs
	}
	is6, err := p.family()
	if err != nil {
		return nil, err
	}
	if is6 && p.Version == 2 {
		return nil, fmt.Errorf("%w: VRRPv2 is IPv4 only", ErrAddrFamily)
	}
	alen := 4
	if is6 {
		alen = 16
	}
	n := headerLen + alen*len(p.Addrs)
	if p.Version == 2 {
		n += 8
	}
	b := make([]byte, n)
	b[0] = p.Version<<4 | (p.Type & 0x0f)
	b[1] = p.VRID
	b[2] = p.Priority
	b[3] = uint8(len(p.Addrs))
	if p.Version == 2 {
		if p.MaxAdvertInt > 0xff {
			return nil, ErrInterval
		}
		b[4] = p.AuthType
		b[5] = uint8(p.MaxAdvertInt)
	} else {
		if p.MaxAdvertInt > 0xfff {
			return nil, ErrInterval
		}
		binary.BigEndian.PutUint16(b[4:], p.MaxAdvertInt)
	}
	binary.BigEndian.PutUint16(b[6:], p.Checksum)
	off := headerLen
	for _, a := range p.Addrs {
		off += copy(b[off:], a.AsSlice())
	}
	if p.Version == 2 {
		copy(b[off:], p.AuthData[:])
	}
	return b, nil
}

// UnmarshalBinary decodes the structure of an advert without checking its checksum (which
// for VRRPv3 needs the IP addresses; use Decode). Trailing bytes after the addresses (and
// VRRPv2 authentication data) are ignored, as keepalived does.
func (p *Packet) UnmarshalBinary(b []byte) error {
	if len(b) < headerLen {
		return ErrShort
	}
	ver := b[0] >> 4
	if ver != 2 && ver != 3 {
		return fmt.Errorf("%w %d", ErrVersion, ver)
	}
	if b[0]&0x0f != TypeAdvertisement {
		return fmt.Errorf("%w (type %d)", ErrType, b[0]&0x0f)
	}
	count := int(b[3])
	// The address family is not in the message: it follows from its length.
	body := len(b) - headerLen
	if ver == 2 {
		body -= 8
	}
	var alen int
	switch {
	case body == 4*count:
		alen = 4
	case ver == 3 && body == 16*count && count > 0:
		alen = 16
	case ver == 2 && body > 4*count && count > 0:
		alen = 4 // VRRPv2 over IPv4 only; tolerate padding
	default:
		return fmt.Errorf("%w: %d bytes for %d addresses", ErrLength, len(b), count)
	}
	*p = Packet{
		Version:  ver,
		Type:     b[0] & 0x0f,
		VRID:     b[1],
		Priority: b[2],
		Checksum: binary.BigEndian.Uint16(b[6:]),
		Addrs:    make([]netip.Addr, 0, count),
	}
	if ver == 2 {
		p.AuthType = b[4]
		p.MaxAdvertInt = uint16(b[5])
	} else {
		p.MaxAdvertInt = binary.BigEndian.Uint16(b[4:]) & 0x0fff
	}
	off := headerLen
	for range count {
		a, _ := netip.AddrFromSlice(b[off : off+alen])
		p.Addrs = append(p.Addrs, a)
		off += alen
	}
	if ver == 2 {
		copy(p.AuthData[:], b[off:off+8])
	}
	return nil
}

// Encode marshals p with its checksum computed; src and dst are the IP source and
// destination the packet will be sent with (needed for the VRRPv3 pseudo-header).
func Encode(p *Packet, src, dst netip.Addr, mode ChecksumMode) ([]byte, error) {
	q := *p
	q.Checksum = 0
	b, err := q.MarshalBinary()
	if err != nil {
		return nil, err
	}
	sum := Checksum(b, q.Version, src, dst, mode)
	binary.BigEndian.PutUint16(b[6:], sum)
	p.Checksum = sum
	return b, nil
}

// Decode parses an advert received from src to dst and verifies its checksum.
func Decode(b []byte, src, dst netip.Addr, mode ChecksumMode) (*Packet, error) {
	p := new(Packet)
	if err := p.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	if p.Version == 2 || !src.Is4() {
		mode = ChecksumPseudoHeader // v2 ignores the mode; IPv6 always has a pseudo-header
	}
	if !verify(b, p.Version, src, dst, mode) {
		return p, ErrBadChecksum
	}
	return p, nil
}

// verify reports whether b sums to zero with its checksum in place.
func verify(b []byte, version uint8, src, dst netip.Addr, mode ChecksumMode) bool {
	return fold(partial(b, version, src, dst, mode)) == 0xffff
}

// Checksum computes the checksum of the encoded message b, whose checksum field is zero.
func Checksum(b []byte, version uint8, src, dst netip.Addr, mode ChecksumMode) uint16 {
	return ^fold(partial(b, version, src, dst, mode))
}

func partial(b []byte, version uint8, src, dst netip.Addr, mode ChecksumMode) uint32 {
	var sum uint32
	if version == 3 && (mode == ChecksumPseudoHeader || !src.Is4()) {
		sum = sumBytes(sum, src.AsSlice())
		sum = sumBytes(sum, dst.AsSlice())
		if src.Is4() {
			sum += ProtocolNumber
			sum += uint32(len(b))
		} else {
			sum += uint32(len(b)) // 32-bit upper-layer length; fits in the low half
			sum += ProtocolNumber
		}
	}
	return sumBytes(sum, b)
}

func sumBytes(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

func fold(sum uint32) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
