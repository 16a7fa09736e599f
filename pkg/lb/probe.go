package lb

import (
	"encoding/binary"
	"net/netip"
)

// A new VIP holder knows nothing of the connections its predecessor carried, and their
// clients, waiting on a quiet watch, would learn that it is gone only from TCP keepalive
// (15 s and more). The holder makes them learn at once: it sends each client a segment of
// that connection, from VIP:port, whose sequence number is almost surely outside the
// client's receive window. The client's kernel must answer it with an ACK of its own
// current sequence numbers (RFC 793's reply to an unacceptable segment, which RFC 5961
// calls a challenge ACK), and that ACK reaches the new holder, whose kernel has no such
// connection and answers it with a valid RST: the client's read fails with ECONNRESET
// and it reconnects, to the new holder. The segment carries one byte of data, because
// Linux limits its answers to segments without data to one per 500 ms per connection
// (tcp_invalid_ratelimit), and not those with data. Should the sequence number land in the
// window after all (a chance of the window's size in 2^32), the client still ACKs (an
// out-of-order byte) and is reset the same way.

// probeSegment returns the IP packet of one probe from local to client: an IPv4 or IPv6
// header (the kernel sends it as it is, on an IPPROTO_RAW socket) and a TCP ACK segment
// with sequence number seq, acknowledgment number ack and one byte of data. It returns nil
// when the two addresses are not of one family.
func probeSegment(local, client netip.AddrPort, seq, ack uint32) []byte {
	const tcpLen = 20 + 1
	src, dst := local.Addr(), client.Addr()
	var pkt []byte
	switch {
	case src.Is4() && dst.Is4():
		pkt = make([]byte, 20+tcpLen)
		ip := pkt[:20]
		ip[0] = 0x45 // version 4, header 5 words
		binary.BigEndian.PutUint16(ip[2:4], uint16(len(pkt)))
		binary.BigEndian.PutUint16(ip[6:8], 0x4000) // don't fragment
		ip[8] = 64                                  // TTL
		ip[9] = 6                                   // TCP
		s, d := src.As4(), dst.As4()
		copy(ip[12:16], s[:])
		copy(ip[16:20], d[:])
		binary.BigEndian.PutUint16(ip[10:12], ^checksum(0, ip))
	case src.Is6() && dst.Is6() && !src.Is4In6() && !dst.Is4In6():
		pkt = make([]byte, 40+tcpLen)
		ip := pkt[:40]
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:6], tcpLen)
		ip[6] = 6   // next header: TCP
		ip[7] = 255 // hop limit: the client is on the same segment, or routed
		s, d := src.As16(), dst.As16()
		copy(ip[8:24], s[:])
		copy(ip[24:40], d[:])
	default:
		return nil
	}
	tcp := pkt[len(pkt)-tcpLen:]
	binary.BigEndian.PutUint16(tcp[0:2], local.Port())
	binary.BigEndian.PutUint16(tcp[2:4], client.Port())
	binary.BigEndian.PutUint32(tcp[4:8], seq)
	binary.BigEndian.PutUint32(tcp[8:12], ack)
	tcp[12] = 5 << 4 // data offset: 5 words, no options
	tcp[13] = 0x10   // ACK
	binary.BigEndian.PutUint16(tcp[14:16], 512)
	tcp[20] = 0 // the byte of data
	binary.BigEndian.PutUint16(tcp[16:18], ^checksum(pseudoHeaderSum(src, dst, tcpLen), tcp))
	return pkt
}

// pseudoHeaderSum is the ones'-complement sum of TCP's pseudo-header (RFC 793, RFC 8200).
func pseudoHeaderSum(src, dst netip.Addr, length int) uint32 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		add(s[:])
		add(d[:])
	} else {
		s, d := src.As16(), dst.As16()
		add(s[:])
		add(d[:])
	}
	return sum + 6 + uint32(length)
}

// checksum adds b to the ones'-complement sum and folds it to 16 bits.
func checksum(sum uint32, b []byte) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return uint16(sum)
}
