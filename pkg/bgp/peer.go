package bgp

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Peer is one BGP neighbour of the speaker.
type Peer struct {
	Addr     netip.Addr // neighbour address
	AS       uint32     // neighbour's autonomous system number
	Password string     // TCP MD5 signature key (RFC 2385); empty: none
	Port     uint16     // neighbour's TCP port; 0: 179

	// Multihop is the TTL of the session's packets for a neighbour that is not directly
	// connected (eBGP multihop); 0 keeps the eBGP default of TTL 1.
	Multihop uint8
	// Source is the local address of the session; zero: chosen by the kernel's route.
	Source netip.Addr
	// HoldTime is proposed in the OPEN; the session uses the smaller of both sides' (RFC
	// 4271 4.2). A peer that hears nothing for this long tears the session down and
	// withdraws the routes learnt from it: the time a crashed speaker keeps its routes.
	HoldTime time.Duration
	// Keepalive is the interval between KEEPALIVE messages (a third of HoldTime is usual).
	Keepalive time.Duration
}

// Errors of ParsePeer and Config.Validate.
var (
	ErrBadAS   = errors.New("bgp: AS number must be 1 to 4294967295 (not 23456, AS_TRANS)")
	ErrBadPeer = errors.New("bgp: peer must be ADDRESS:AS[:PASSWORD], IPv6 addresses in brackets")
)

// ParseAS parses an autonomous system number, as plain (65001) or asdot (1.10) notation.
func ParseAS(s string) (uint32, error) {
	var as uint64
	var err error
	if hi, lo, ok := strings.Cut(s, "."); ok {
		h, err1 := strconv.ParseUint(hi, 10, 16)
		l, err2 := strconv.ParseUint(lo, 10, 16)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("%w, got %q", ErrBadAS, s)
		}
		as = h<<16 | l
	} else if as, err = strconv.ParseUint(s, 10, 32); err != nil {
		return 0, fmt.Errorf("%w, got %q", ErrBadAS, s)
	}
	if as == 0 || as == 23456 {
		return 0, fmt.Errorf("%w, got %q", ErrBadAS, s)
	}
	return uint32(as), nil
}

// ParsePeer parses "ADDRESS:AS[:PASSWORD]" ("[fd00::1]:65000:secret" for IPv6). The
// password is everything after the second colon, so it may itself contain colons.
func ParsePeer(s string) (Peer, error) {
	var host, rest string
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]:")
		if i < 0 {
			return Peer{}, fmt.Errorf("%w, got %q", ErrBadPeer, s)
		}
		host, rest = s[1:i], s[i+2:]
	} else {
		var ok bool
		if host, rest, ok = strings.Cut(s, ":"); !ok {
			return Peer{}, fmt.Errorf("%w, got %q", ErrBadPeer, s)
		}
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || addr.Zone() != "" || (addr.Is4() && strings.HasPrefix(s, "[")) {
		return Peer{}, fmt.Errorf("%w: %q is not an IP address", ErrBadPeer, host)
	}
	asText, password, _ := strings.Cut(rest, ":")
	as, err := ParseAS(asText)
	if err != nil {
		return Peer{}, fmt.Errorf("bgp: peer %s: %w", host, err)
	}
	if len(password) > 80 {
		return Peer{}, fmt.Errorf("bgp: peer %s: TCP MD5 keys have at most 80 bytes", host)
	}
	return Peer{Addr: addr.Unmap(), AS: as, Password: password}, nil
}

// String formats p as ParsePeer reads it, with the password elided.
func (p Peer) String() string {
	s := netip.AddrPortFrom(p.Addr, 0).String()
	s = s[:strings.LastIndex(s, ":")] + ":" + strconv.FormatUint(uint64(p.AS), 10)
	if p.Password != "" {
		s += ":***"
	}
	return s
}

// ParseCommunity parses a standard community (RFC 1997): "AS:VALUE" with two 16-bit
// numbers, or one of the well-known names no-export, no-advertise, no-export-subconfed,
// graceful-shutdown and blackhole.
func ParseCommunity(s string) (uint32, error) {
	switch strings.ToLower(s) {
	case "no-export":
		return 0xFFFFFF01, nil
	case "no-advertise":
		return 0xFFFFFF02, nil
	case "no-export-subconfed", "local-as":
		return 0xFFFFFF03, nil
	case "graceful-shutdown":
		return 0xFFFF0000, nil
	case "blackhole":
		return 0xFFFF029A, nil
	}
	hi, lo, ok := strings.Cut(s, ":")
	h, err1 := strconv.ParseUint(hi, 10, 16)
	l, err2 := strconv.ParseUint(lo, 10, 16)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bgp: community %q: want AS:VALUE with numbers 0-65535, or no-export, no-advertise, no-export-subconfed, graceful-shutdown, blackhole", s)
	}
	return uint32(h)<<16 | uint32(l), nil
}

// HostRoute returns the host route of a's address: /32 for IPv4, /128 for IPv6.
func HostRoute(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen())
}
