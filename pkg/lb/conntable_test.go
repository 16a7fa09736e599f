package lb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// TestSyncDatagramBytes pins the wire format to bytes written out by hand.
func TestSyncDatagramBytes(t *testing.T) {
	d := syncDatagram{Kind: syncTable, Boot: 0x0102030405060708, Round: 9, Entries: []connEntry{
		{Client: ap("10.77.0.10:40000"), Local: ap("10.77.0.100:8443")},
	}}
	got, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hex.DecodeString("48435431" + "02" + "00" + "0001" + "0102030405060708" + "00000009" +
		"04" + "0a4d000a" + "9c40" + "0a4d0064" + "20fb")
	if !bytes.Equal(got, want) {
		t.Fatalf("marshal:\n got %x\nwant %x", got, want)
	}
	var back syncDatagram
	if err := back.UnmarshalBinary(want); err != nil {
		t.Fatal(err)
	}
	if back.Kind != d.Kind || back.Boot != d.Boot || back.Round != d.Round || len(back.Entries) != 1 || back.Entries[0] != d.Entries[0] {
		t.Fatalf("unmarshal: %+v, want %+v", back, d)
	}
}

func TestSyncDatagramRoundTrip(t *testing.T) {
	for name, d := range map[string]syncDatagram{
		"heartbeat":   {Kind: syncHeartbeat, Boot: 1, Round: 7},
		"empty table": {Kind: syncTable, Boot: 2, Round: 1<<32 - 1},
		"mixed families": {Kind: syncTable, Boot: 3, Round: 2, Entries: []connEntry{
			{Client: ap("10.77.0.10:1"), Local: ap("10.77.0.100:8443")},
			{Client: ap("[fd00::10]:65535"), Local: ap("[fd00::100]:8443")},
			{Client: ap("127.0.0.1:5"), Local: ap("127.0.0.1:8443")},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := d.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var back syncDatagram
			if err := back.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if back.Kind != d.Kind || back.Boot != d.Boot || back.Round != d.Round || len(back.Entries) != len(d.Entries) {
				t.Fatalf("got %+v, want %+v", back, d)
			}
			for i := range d.Entries {
				if back.Entries[i] != d.Entries[i] {
					t.Errorf("entry %d: got %v, want %v", i, back.Entries[i], d.Entries[i])
				}
			}
		})
	}
}

func TestSyncDatagramRejects(t *testing.T) {
	good, _ := (&syncDatagram{Kind: syncTable, Boot: 1, Round: 1, Entries: []connEntry{
		{Client: ap("10.77.0.10:40000"), Local: ap("10.77.0.100:8443")},
	}}).MarshalBinary()
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":              {nil, ErrSyncShort},
		"header cut":         {good[:19], ErrSyncShort},
		"entry cut":          {good[:len(good)-1], ErrSyncShort},
		"bad magic":          {mod(func(b []byte) []byte { b[0] = 'X'; return b }), ErrSyncMagic},
		"unknown kind":       {mod(func(b []byte) []byte { b[4] = 9; return b }), ErrSyncKind},
		"reserved set":       {mod(func(b []byte) []byte { b[5] = 1; return b }), ErrSyncKind},
		"heartbeat entries":  {mod(func(b []byte) []byte { b[4] = syncHeartbeat; return b }), ErrSyncKind},
		"unknown family":     {mod(func(b []byte) []byte { b[20] = 5; return b }), ErrSyncFamily},
		"zero port":          {mod(func(b []byte) []byte { b[25], b[26] = 0, 0; return b }), ErrSyncEntry},
		"trailing byte":      {append(append([]byte(nil), good...), 0), ErrSyncTrailer},
		"count beyond bytes": {mod(func(b []byte) []byte { binary.BigEndian.PutUint16(b[6:], 2); return b }), ErrSyncShort},
		"count far beyond":   {mod(func(b []byte) []byte { binary.BigEndian.PutUint16(b[6:], 0xffff); return b }), ErrSyncShort},
	} {
		t.Run(name, func(t *testing.T) {
			var d syncDatagram
			if err := d.UnmarshalBinary(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	bad := syncDatagram{Kind: syncTable, Entries: []connEntry{{Client: ap("10.77.0.10:1"), Local: ap("[fd00::1]:8443")}}}
	if _, err := bad.MarshalBinary(); !errors.Is(err, ErrSyncEntry) {
		t.Errorf("marshal of a mixed-family entry: %v, want ErrSyncEntry", err)
	}
}

func FuzzSyncDatagram(f *testing.F) {
	good, _ := (&syncDatagram{Kind: syncTable, Boot: 1, Round: 1, Entries: []connEntry{
		{Client: ap("10.77.0.10:40000"), Local: ap("10.77.0.100:8443")},
		{Client: ap("[fd00::10]:1"), Local: ap("[fd00::100]:8443")},
	}}).MarshalBinary()
	hb, _ := (&syncDatagram{Kind: syncHeartbeat, Boot: 5}).MarshalBinary()
	f.Add(good)
	f.Add(hb)
	f.Add([]byte("HCT1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d syncDatagram
		if err := d.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := d.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %x but cannot encode it: %v", b, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("round trip changed the bytes:\n in %x\nout %x", b, again)
		}
	})
}

func TestSplitTable(t *testing.T) {
	var entries []connEntry
	for i := range 1000 {
		entries = append(entries, connEntry{Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, byte(i >> 8), byte(i)}), uint16(1000+i)), Local: ap("10.77.0.100:8443")})
		if i%10 == 0 {
			entries = append(entries, connEntry{Client: netip.AddrPortFrom(netip.MustParseAddr("fd00::10"), uint16(1000+i)), Local: ap("[fd00::100]:8443")})
		}
	}
	seen := map[connEntry]bool{}
	for _, b := range splitTable(nil, 1, 3, entries) {
		if len(b) > maxSyncDatagram {
			t.Errorf("datagram of %d bytes, more than %d", len(b), maxSyncDatagram)
		}
		var d syncDatagram
		if err := d.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for _, e := range d.Entries {
			seen[e] = true
		}
	}
	if len(seen) != len(entries) {
		t.Errorf("%d entries arrived, want %d", len(seen), len(entries))
	}
	if got := splitTable(nil, 1, 3, nil); len(got) != 1 {
		t.Errorf("empty table: %d datagrams, want 1 (the receiver must learn the round)", len(got))
	}
}

func TestPeerTableApply(t *testing.T) {
	e := func(port uint16) connEntry {
		return connEntry{Client: netip.AddrPortFrom(netip.MustParseAddr("10.77.0.10"), port), Local: ap("10.77.0.100:8443")}
	}
	table := func(boot uint64, round uint32, ports ...uint16) *syncDatagram {
		d := &syncDatagram{Kind: syncTable, Boot: boot, Round: round}
		for _, p := range ports {
			d.Entries = append(d.Entries, e(p))
		}
		return d
	}
	now := time.Now()
	pt := &peerTable{conns: map[connEntry]uint32{}}
	has := func(want ...uint16) {
		t.Helper()
		if len(pt.conns) != len(want) {
			t.Fatalf("table %v, want ports %v", pt.conns, want)
		}
		for _, p := range want {
			if _, ok := pt.conns[e(p)]; !ok {
				t.Fatalf("table %v lacks port %d", pt.conns, p)
			}
		}
	}
	pt.apply(table(1, 1, 1, 2, 3), now)
	has(1, 2, 3)
	pt.apply(table(1, 2, 1, 2), now) // 3 closed: kept one more round (its datagram may be lost)
	has(1, 2, 3)
	pt.apply(&syncDatagram{Kind: syncHeartbeat, Boot: 1, Round: 2}, now)
	has(1, 2, 3)
	pt.apply(table(1, 3, 1), now) // a round without 3: gone
	has(1, 2)
	pt.apply(table(1, 1, 9), now) // a datagram of an old round arriving late
	has(1, 2)
	pt.apply(table(1, 4, 4), now)
	has(1, 4)
	later := now.Add(time.Second)
	pt.apply(&syncDatagram{Kind: syncHeartbeat, Boot: 2}, later) // restarted: carries nothing of before
	has()
	if !pt.lastHeard.Equal(later) {
		t.Errorf("lastHeard %v, want %v", pt.lastHeard, later)
	}
	pt.apply(table(2, 1, 5), later)
	has(5)

	// Bounded.
	big := &syncDatagram{Kind: syncTable, Boot: 2, Round: 1}
	for i := range maxPeerEntries {
		big.Entries = append(big.Entries, connEntry{Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 40000), Local: ap("10.77.0.100:8443")})
	}
	if dropped := pt.apply(big, later); dropped != 1 || len(pt.conns) != maxPeerEntries {
		t.Errorf("dropped %d with %d kept, want 1 dropped and %d kept", dropped, len(pt.conns), maxPeerEntries)
	}
}

// TestProbeSegment checks the probe's headers and checksums: summed with their checksum,
// the IPv4 header and the TCP segment with its pseudo-header come to 0xffff.
func TestProbeSegment(t *testing.T) {
	for name, tc := range map[string]struct{ local, client string }{
		"IPv4": {"10.77.0.100:8443", "10.77.0.10:40000"},
		"IPv6": {"[fd00::100]:8443", "[fd00::10]:40001"},
	} {
		t.Run(name, func(t *testing.T) {
			local, client := ap(tc.local), ap(tc.client)
			pkt := probeSegment(local, client, 0x11223344, 0x55667788)
			hl := 40
			if local.Addr().Is4() {
				hl = 20
				if got := checksum(0, pkt[:20]); got != 0xffff {
					t.Errorf("IPv4 header checksum does not verify: %#x", got)
				}
				if int(binary.BigEndian.Uint16(pkt[2:4])) != len(pkt) {
					t.Errorf("total length %d, packet %d", binary.BigEndian.Uint16(pkt[2:4]), len(pkt))
				}
			} else if int(binary.BigEndian.Uint16(pkt[4:6])) != len(pkt)-40 {
				t.Errorf("payload length %d, want %d", binary.BigEndian.Uint16(pkt[4:6]), len(pkt)-40)
			}
			tcp := pkt[hl:]
			if got := checksum(pseudoHeaderSum(local.Addr(), client.Addr(), len(tcp)), tcp); got != 0xffff {
				t.Errorf("TCP checksum does not verify: %#x", got)
			}
			if sp, dp := binary.BigEndian.Uint16(tcp[0:]), binary.BigEndian.Uint16(tcp[2:]); sp != local.Port() || dp != client.Port() {
				t.Errorf("ports %d -> %d, want %d -> %d", sp, dp, local.Port(), client.Port())
			}
			if seq, ack := binary.BigEndian.Uint32(tcp[4:]), binary.BigEndian.Uint32(tcp[8:]); seq != 0x11223344 || ack != 0x55667788 {
				t.Errorf("seq %#x ack %#x", seq, ack)
			}
			if tcp[13] != 0x10 || len(tcp) != 21 {
				t.Errorf("flags %#x, segment %d bytes: want a bare ACK with one byte of data", tcp[13], len(tcp))
			}
		})
	}
	if probeSegment(ap("10.77.0.100:8443"), ap("[fd00::10]:1"), 0, 0) != nil {
		t.Error("a probe across address families was built")
	}
}

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func peerStatus(p *Proxy, addr string) SyncPeerStatus {
	for _, pe := range p.Status().Sync.Peers {
		if pe.Addr == addr {
			return pe
		}
	}
	return SyncPeerStatus{}
}

// TestConnTableSync runs two proxies that share their connection tables over real UDP on
// loopback: a connection through one appears in the other's table, with its addresses, and
// is gone from it after it closes; datagrams from an address that is no peer, and
// malformed ones from a peer's address, are dropped and counted.
func TestConnTableSync(t *testing.T) {
	a := newBackend(t, "a")
	portA, portB, portX := freeUDPPort(t), freeUDPPort(t), freeUDPPort(t)
	addrA, addrB, addrX := fmt.Sprintf("127.0.0.1:%d", portA), fmt.Sprintf("127.0.0.1:%d", portB), fmt.Sprintf("127.0.0.1:%d", portX)
	cfgA, cfgB := testConfig(a), testConfig(a)
	cfgA.SyncListen, cfgA.SyncPeers = addrA, []string{addrB}
	cfgB.SyncListen, cfgB.SyncPeers = addrB, []string{addrA, addrX}
	for _, c := range []*Config{cfgA, cfgB} {
		c.SyncInterval, c.SyncHeartbeat = 100*time.Millisecond, 20*time.Millisecond
	}
	pa, pb := startProxy(t, cfgA), startProxy(t, cfgB)
	waitAllUp(t, pa.Proxy)

	s := openStream(t, pa.Addr(), "every=1h")
	clientAddr := s.conn.LocalAddr().String()
	waitFor(t, "B to learn A's connection", 20*time.Second, func() bool { return peerStatus(pb.Proxy, addrA).Connections == 1 })
	pb.sync.mu.Lock()
	for _, pt := range pb.sync.peers {
		for e := range pt.conns {
			if e.Client.String() != clientAddr || e.Local.String() != pa.Addr().String() {
				t.Errorf("B's table holds %v, want client %s on %s", e, clientAddr, pa.Addr())
			}
		}
	}
	pb.sync.mu.Unlock()
	if pe := peerStatus(pa.Proxy, addrB); pe.Connections != 0 || pe.LastHeard.IsZero() {
		t.Errorf("A's view of B: %+v, want heard from, no connections", pe)
	}
	s.conn.Close()
	waitFor(t, "B to forget A's closed connection", 20*time.Second, func() bool { return peerStatus(pb.Proxy, addrA).Connections == 0 })

	// Junk from a configured peer's address, and a good datagram from an address that
	// is no peer.
	x, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap(addrX)))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	stranger, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	good, _ := (&syncDatagram{Kind: syncTable, Boot: 1, Round: 1, Entries: []connEntry{{Client: ap("10.77.0.10:1"), Local: ap("10.77.0.100:8443")}}}).MarshalBinary()
	if _, err := x.WriteToUDPAddrPort([]byte("HCT1 and then some junk"), ap(addrB)); err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.WriteToUDPAddrPort(good, ap(addrB)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both dropped and counted", 20*time.Second, func() bool {
		d := pb.Status().Sync.Dropped
		return d[dropMalformed] == 1 && d[dropUnknownPeer] == 1
	})
	if n := peerStatus(pb.Proxy, addrX).Connections; n != 0 {
		t.Errorf("the junk left %d connections in the table", n)
	}
	// And a good one from the peer's address is taken.
	if _, err := x.WriteToUDPAddrPort(good, ap(addrB)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the good datagram applied", 20*time.Second, func() bool { return peerStatus(pb.Proxy, addrX).Connections == 1 })
}

// TestConnTableSyncReloadPeers: a SIGHUP's new --sync-peer list applies to the running
// sync (add-master adds one), and what a reload cannot apply is refused with a reason.
func TestConnTableSyncReloadPeers(t *testing.T) {
	a := newBackend(t, "a")
	addrA, addrB, addrX := fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t)), fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t)), fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t))
	cfgA, cfgB := testConfig(a), testConfig(a)
	cfgA.SyncListen, cfgA.SyncPeers = addrA, []string{addrB}
	cfgB.SyncListen, cfgB.SyncPeers = addrB, []string{addrX} // A not yet known to B
	for _, c := range []*Config{cfgA, cfgB} {
		c.SyncInterval, c.SyncHeartbeat = 100*time.Millisecond, 20*time.Millisecond
	}
	pa, pb := startProxy(t, cfgA), startProxy(t, cfgB)
	waitAllUp(t, pa.Proxy)
	s := openStream(t, pa.Addr(), "every=1h")
	defer s.conn.Close()

	waitFor(t, "B to drop A's datagrams as from an unknown peer", 20*time.Second, func() bool {
		return pb.Status().Sync.Dropped[dropUnknownPeer] > 0
	})
	if err := pb.ReloadSync(addrB, []string{addrA}); err != nil {
		t.Fatalf("ReloadSync: %v", err)
	}
	waitFor(t, "B to learn A's connection after the reload", 20*time.Second, func() bool { return peerStatus(pb.Proxy, addrA).Connections == 1 })
	for _, pe := range pb.Status().Sync.Peers {
		if pe.Addr == addrX {
			t.Errorf("B still lists the removed peer %s", addrX)
		}
	}
	// A peer that stays keeps its table across a reload that adds another.
	if err := pb.ReloadSync(addrB, []string{addrA, addrX}); err != nil {
		t.Fatalf("ReloadSync: %v", err)
	}
	if n := peerStatus(pb.Proxy, addrA).Connections; n != 1 {
		t.Errorf("A's table after a reload that kept it: %d connections, want 1", n)
	}

	if err := pb.ReloadSync(addrX, []string{addrA}); err == nil || !strings.Contains(err.Error(), "sync-listen changed") {
		t.Errorf("moving sync-listen on reload: err %v, want a restart asked for", err)
	}
	if err := pb.ReloadSync(addrB, []string{"master3:8444"}); err == nil {
		t.Error("a peer that is no ip:port was accepted")
	}
	if n := peerStatus(pb.Proxy, addrA).Connections; n != 1 {
		t.Errorf("a refused reload changed A's table: %d connections, want 1", n)
	}
	plain := startProxy(t, testConfig(a))
	if err := plain.ReloadSync("", nil); err != nil {
		t.Errorf("no sync before or after: %v", err)
	}
	if err := plain.ReloadSync(addrX, []string{addrA}); err == nil || !strings.Contains(err.Error(), "restart") {
		t.Errorf("starting the sync on reload: err %v, want a restart asked for", err)
	}
}

// TestConnTableSyncDuringDrain: a draining proxy (SIGTERM, a connection still open) goes
// on telling its peers it is alive, so that a peer taking its address over does not count
// it dead and reset the connections the drain is finishing.
func TestConnTableSyncDuringDrain(t *testing.T) {
	a := newBackend(t, "a")
	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t)), fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t))
	cfgA, cfgB := testConfig(a), testConfig(a)
	cfgA.SyncListen, cfgA.SyncPeers = addrA, []string{addrB}
	cfgB.SyncListen, cfgB.SyncPeers = addrB, []string{addrA}
	for _, c := range []*Config{cfgA, cfgB} {
		c.SyncInterval, c.SyncHeartbeat = 100*time.Millisecond, 20*time.Millisecond
	}
	cfgA.DrainTimeout = time.Minute
	pa, pb := startProxy(t, cfgA), startProxy(t, cfgB)
	waitAllUp(t, pa.Proxy)
	s := openStream(t, pa.Addr(), "every=1h")
	waitFor(t, "B to learn A's connection", 20*time.Second, func() bool { return peerStatus(pb.Proxy, addrA).Connections == 1 })

	pa.cancel() // SIGTERM: A drains while the stream stays open
	drainStart := time.Now()
	waitFor(t, "B to hear from A after its drain began", 20*time.Second, func() bool {
		return peerStatus(pb.Proxy, addrA).LastHeard.After(drainStart.Add(5 * cfgA.SyncHeartbeat))
	})
	select {
	case <-pa.done:
		t.Fatal("A stopped with a connection still open; the test needs it draining")
	default:
	}
	s.conn.Close()
	select {
	case <-pa.done:
	case <-time.After(30 * time.Second):
		t.Fatal("A did not stop once its last connection closed")
	}
}
