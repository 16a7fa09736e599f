package lb

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkConnTable measures what the connection-table sync costs per client connection:
// each op is one connection. addresses: the getsockname lbproxy makes for each accepted
// connection when the sync is on (accept4 tells it the client's address); share: encoding a 10,000-connection table
// into datagrams (once per --sync-interval, per table, sent to each peer); receive:
// decoding and merging it at a peer; probe: building and sending one probe on the raw
// socket (two per connection of a dead peer after a takeover; needs root).
func BenchmarkConnTable(b *testing.B) {
	// cpu reports the process's CPU time per unit, which a loaded machine inflates less
	// than the wall-clock ns/op.
	cpu := func(b *testing.B, per int, unit string) func() {
		start := cpuTime()
		return func() {
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N)/float64(per), unit)
		}
	}
	const n = 10000
	entries := make([]connEntry, n)
	for i := range entries {
		entries[i] = connEntry{Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, byte(i >> 8), byte(i)}), uint16(30000+i)), Local: ap("10.77.0.100:8443")}
	}

	b.Run("addresses", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		f, err := s.(*net.TCPConn).File()
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		peer := sockAddrPort(fd, true) // accept4 tells lbproxy this for free
		b.ReportAllocs()
		done := cpu(b, 1, "cpu-ns/conn")
		for b.Loop() {
			if !connOf(fd, peer).Client.IsValid() {
				b.Fatal("no addresses")
			}
		}
		done()
	})

	b.Run("share", func(b *testing.B) {
		var out [][]byte
		b.ReportAllocs()
		done := cpu(b, n, "cpu-ns/conn")
		for b.Loop() {
			out = splitTable(out[:0], 1, 1, entries)
		}
		done()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/conn")
		bytes := 0
		for _, d := range out {
			bytes += len(d)
		}
		b.ReportMetric(float64(bytes)/n, "B/conn")
	})

	b.Run("receive", func(b *testing.B) {
		dgrams := splitTable(nil, 1, 1, entries)
		pt := &peerTable{conns: map[connEntry]uint32{}}
		var d syncDatagram
		round := uint32(0)
		b.ReportAllocs()
		done := cpu(b, n, "cpu-ns/conn")
		for b.Loop() {
			round++
			for _, raw := range dgrams {
				if err := d.UnmarshalBinary(raw); err != nil {
					b.Fatal(err)
				}
				d.Round = round
				pt.apply(&d, time.Time{})
			}
		}
		done()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/conn")
	})

	b.Run("probe", func(b *testing.B) {
		if os.Geteuid() != 0 {
			b.Skip("a raw socket needs root")
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(fd)
		// From and to loopback, to a port nobody listens on: the kernel drops it (an
		// answer RST goes back to 127.0.0.1 and is dropped too).
		local, client := ap("127.0.0.1:1"), ap("127.0.0.1:2")
		dst := &unix.SockaddrInet4{Addr: client.Addr().As4()}
		b.ReportAllocs()
		done := cpu(b, 1, "cpu-ns/probe")
		for b.Loop() {
			pkt := probeSegment(local, client, rand.Uint32(), rand.Uint32())
			if err := unix.Sendto(fd, pkt, 0, dst); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
