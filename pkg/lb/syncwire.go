package lb

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// The connection-table datagram that lbproxies on the masters send each other (see
// conntable.go). One UDP datagram, big-endian:
//
//	0  magic    "HCT1"
//	4  kind     1 heartbeat (no entries), 2 table (a part of one round's table)
//	5  reserved 0
//	6  count    number of entries that follow
//	8  boot     random number the sender drew at start: a new one means a restart
//	16 round    the sender's table round: every part of one round's table carries it
//	20 entries  count times: family (4 or 6), client address, client port,
//	            local (VIP) address, local port
//
// An IPv4 entry takes 13 bytes, an IPv6 one 37; a datagram holds at most maxSyncDatagram
// bytes, so a table of N IPv4 connections is N/106 datagrams a round.

// syncMagic starts every datagram.
var syncMagic = [4]byte{'H', 'C', 'T', '1'}

// Datagram kinds.
const (
	syncHeartbeat = 1
	syncTable     = 2
)

const (
	syncHeaderLen = 20
	// maxSyncDatagram keeps a datagram within a 1500-byte MTU with IPv6 and UDP headers.
	maxSyncDatagram = 1400
)

// Sentinel errors of UnmarshalBinary.
var (
	ErrSyncShort   = errors.New("lb: sync datagram: too short")
	ErrSyncMagic   = errors.New("lb: sync datagram: bad magic")
	ErrSyncKind    = errors.New("lb: sync datagram: unknown kind")
	ErrSyncFamily  = errors.New("lb: sync datagram: entry of unknown address family")
	ErrSyncTrailer = errors.New("lb: sync datagram: bytes after the last entry")
	ErrSyncEntry   = errors.New("lb: sync datagram: invalid entry")
)

// connEntry is one client connection that an lbproxy carries: the client's address and the
// local address it connected to (the VIP, when it came through the VIP).
type connEntry struct {
	Client netip.AddrPort // the client's address and port
	Local  netip.AddrPort // the address and port the client connected to
}

// syncDatagram is one datagram of the connection-table sync.
type syncDatagram struct {
	Kind    uint8       // syncHeartbeat or syncTable
	Boot    uint64      // the sender's random start number
	Round   uint32      // the sender's table round
	Entries []connEntry // a heartbeat has none
}

func entryLen(e connEntry) int {
	if e.Client.Addr().Is4() {
		return 13
	}
	return 37
}

// valid reports whether e can be sent: both addresses of one family, ports not zero.
func (e connEntry) valid() bool {
	c, l := e.Client.Addr(), e.Local.Addr()
	return c.IsValid() && l.IsValid() && c.Is4() == l.Is4() && e.Client.Port() != 0 && e.Local.Port() != 0 &&
		c.Zone() == "" && l.Zone() == "" && !c.Is4In6() && !l.Is4In6()
}

// MarshalBinary encodes d; it fails with ErrSyncEntry for an entry that is not valid.
func (d *syncDatagram) MarshalBinary() ([]byte, error) {
	return d.appendTo(make([]byte, 0, syncHeaderLen+13*len(d.Entries)))
}

func (d *syncDatagram) appendTo(b []byte) ([]byte, error) {
	if d.Kind != syncHeartbeat && d.Kind != syncTable {
		return nil, ErrSyncKind
	}
	b = append(b, syncMagic[:]...)
	b = append(b, d.Kind, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(d.Entries)))
	b = binary.BigEndian.AppendUint64(b, d.Boot)
	b = binary.BigEndian.AppendUint32(b, d.Round)
	for _, e := range d.Entries {
		if !e.valid() {
			return nil, ErrSyncEntry
		}
		if e.Client.Addr().Is4() {
			b = append(b, 4)
		} else {
			b = append(b, 6)
		}
		b = appendAddrPort(b, e.Client)
		b = appendAddrPort(b, e.Local)
	}
	return b, nil
}

func appendAddrPort(b []byte, ap netip.AddrPort) []byte {
	if a := ap.Addr(); a.Is4() {
		v := a.As4()
		b = append(b, v[:]...)
	} else {
		v := a.As16()
		b = append(b, v[:]...)
	}
	return binary.BigEndian.AppendUint16(b, ap.Port())
}

// UnmarshalBinary decodes one datagram. It accepts nothing but exactly what MarshalBinary
// writes: a heartbeat with entries, an entry with a zero port or two families, or a byte
// after the last entry is an error.
func (d *syncDatagram) UnmarshalBinary(b []byte) error {
	if len(b) < syncHeaderLen {
		return ErrSyncShort
	}
	if [4]byte(b[:4]) != syncMagic {
		return ErrSyncMagic
	}
	kind, count := b[4], int(binary.BigEndian.Uint16(b[6:8]))
	if (kind != syncHeartbeat && kind != syncTable) || b[5] != 0 || (kind == syncHeartbeat && count != 0) {
		return ErrSyncKind
	}
	d.Kind = kind
	d.Boot = binary.BigEndian.Uint64(b[8:16])
	d.Round = binary.BigEndian.Uint32(b[16:20])
	d.Entries = d.Entries[:0]
	b = b[syncHeaderLen:]
	if count > len(b)/13 {
		return ErrSyncShort
	}
	for range count {
		if len(b) < 1 {
			return ErrSyncShort
		}
		n := 0
		switch b[0] {
		case 4:
			n = 4
		case 6:
			n = 16
		default:
			return ErrSyncFamily
		}
		if len(b) < 1+2*(n+2) {
			return ErrSyncShort
		}
		e := connEntry{Client: addrPortAt(b[1:], n), Local: addrPortAt(b[1+n+2:], n)}
		if !e.valid() {
			return ErrSyncEntry
		}
		d.Entries = append(d.Entries, e)
		b = b[1+2*(n+2):]
	}
	if len(b) != 0 {
		return ErrSyncTrailer
	}
	return nil
}

func addrPortAt(b []byte, n int) netip.AddrPort {
	var a netip.Addr
	if n == 4 {
		a = netip.AddrFrom4([4]byte(b[:4]))
	} else {
		a = netip.AddrFrom16([16]byte(b[:16]))
	}
	return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[n:n+2]))
}

// splitTable encodes one round's table as datagrams of at most maxSyncDatagram bytes,
// appending to out; an empty table is one datagram with no entries, so that the receiver
// learns the round.
func splitTable(out [][]byte, boot uint64, round uint32, entries []connEntry) [][]byte {
	for first := true; first || len(entries) > 0; first = false {
		size, n := syncHeaderLen, 0
		for n < len(entries) && n < 0xffff && size+entryLen(entries[n]) <= maxSyncDatagram {
			size += entryLen(entries[n])
			n++
		}
		d := syncDatagram{Kind: syncTable, Boot: boot, Round: round, Entries: entries[:n]}
		if b, err := d.appendTo(make([]byte, 0, size)); err == nil {
			out = append(out, b)
		}
		entries = entries[n:]
	}
	return out
}
