package lb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The connection-table sync. Each lbproxy tells its peers (the other masters' lbproxies,
// --sync-peer) which client connections it carries: the client's address and port and the
// local address and port they connected to, 13 bytes each (IPv4). It sends its whole table
// every --sync-interval, as a round of datagrams, and a heartbeat (a header alone) every
// --sync-heartbeat in between. A receiver keeps, per peer, every entry seen in that peer's
// last two rounds, so a lost datagram costs nothing and a closed connection is forgotten
// two rounds later; a peer that falls silent keeps its last table, which is what is needed
// when it has crashed or been cut off.
//
// When an address appears on this host (vipd bound the VIP: lbproxy learns it from
// netlink, with no link to vipd), lbproxy looks at the peers that reported connections on
// it. A peer it still hears from after the address appeared is alive and handing over:
// vipd's make-before-break drain lets that peer finish and reset its connections itself.
// A peer silent for three heartbeats has crashed or is cut off: for each of its
// connections on the address that this host does not carry, lbproxy sends the client a
// probe (probe.go) that makes the client's kernel reset the connection within a round
// trip, so the client reconnects to this master at once instead of after TCP keepalive.
// The probes go out twice, probeRepeat apart, in case the first ones were lost or reached
// the client before vipd's gratuitous ARP did.
//
// Peers are authenticated by their address only: a datagram whose source is not a
// configured peer's address and port is dropped. A forged table can do little harm: the
// probes it causes only reset connections this host does not carry, to a VIP it has just
// taken over, which are dead already.

// Dropped-datagram reasons, the label of lbproxy_sync_datagrams_dropped_total.
const (
	dropMalformed   = "malformed"
	dropUnknownPeer = "unknown_peer"
	dropTableFull   = "table_full" // entries dropped, not datagrams: see maxPeerEntries
)

// maxPeerEntries bounds the connections kept per peer; a peer's entries beyond it are
// dropped (and counted).
const maxPeerEntries = 1 << 17

// probeRepeat is the time between the two rounds of probes after a takeover.
const probeRepeat = 200 * time.Millisecond

// deadHeartbeats is how many heartbeat intervals of silence make a peer dead.
const deadHeartbeats = 3

// peerTable is what one peer reported.
type peerTable struct {
	addr      netip.AddrPort
	boot      uint64
	round     uint32
	lastHeard time.Time
	conns     map[connEntry]uint32 // the round each was last reported in
}

// apply merges datagram d into the table; it returns the entries dropped for want of room.
func (pt *peerTable) apply(d *syncDatagram, now time.Time) int {
	pt.lastHeard = now
	switch {
	case d.Boot != pt.boot:
		// The peer restarted (or is heard from the first time): what it carried before
		// is gone.
		pt.boot, pt.round = d.Boot, d.Round
		clear(pt.conns)
	case d.Kind == syncTable && d.Round != pt.round && d.Round-pt.round < 1<<31:
		// A new round: forget entries not reported in this round or the one before.
		pt.round = d.Round
		for e, r := range pt.conns {
			if pt.round-r > 1 {
				delete(pt.conns, e)
			}
		}
	}
	if d.Kind != syncTable || pt.round-d.Round > 1 {
		return 0 // a heartbeat, or a datagram of an old round arriving late
	}
	dropped := 0
	for _, e := range d.Entries {
		if _, ok := pt.conns[e]; !ok && len(pt.conns) >= maxPeerEntries {
			dropped++
			continue
		}
		if r, ok := pt.conns[e]; !ok || d.Round-r < 1<<31 {
			pt.conns[e] = d.Round
		}
	}
	return dropped
}

// connSync runs the sync for one proxy.
type connSync struct {
	p        *Proxy
	log      *slog.Logger
	interval time.Duration
	beat     time.Duration
	boot     uint64

	udp        *net.UDPConn
	raw4, raw6 int // IPPROTO_RAW sockets for probes; -1 when not open

	mu    sync.Mutex
	peers map[netip.AddrPort]*peerTable

	sent, received, malformed, unknownPeer, tableFull atomic.Uint64
	takeovers, probes, probeErrors                    atomic.Uint64
}

// newConnSync opens the sync's sockets: the UDP socket on --sync-listen and the raw sockets
// that send probes (they need CAP_NET_RAW).
func newConnSync(p *Proxy) (*connSync, error) {
	cfg := p.cfg
	s := &connSync{p: p, log: p.log, interval: cfg.SyncInterval, beat: cfg.SyncHeartbeat,
		boot: rand.Uint64(), raw4: -1, raw6: -1, peers: map[netip.AddrPort]*peerTable{}}
	if err := s.setPeers(cfg.SyncPeers); err != nil {
		return nil, err
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.SyncListen)
	if err != nil {
		return nil, fmt.Errorf("lb: sync listen %s: %w", cfg.SyncListen, err)
	}
	if s.udp, err = net.ListenUDP("udp", laddr); err != nil {
		return nil, fmt.Errorf("lb: sync listen %s: %w", cfg.SyncListen, err)
	}
	if s.raw4, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW); err != nil {
		s.close()
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("lb: the connection-table sync sends its probes on a raw socket, which needs CAP_NET_RAW: %w", err)
		}
		return nil, fmt.Errorf("lb: raw socket for probes: %w", err)
	}
	if s.raw6, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW); err != nil {
		s.raw6 = -1 // IPv6 off on this host: no IPv6 VIP to probe for
	}
	return s, nil
}

// setPeers makes list the peers: a peer already known keeps its table, one no longer
// listed is forgotten (its datagrams are dropped from then on), a new one starts empty.
func (s *connSync) setPeers(list []string) error {
	want := map[netip.AddrPort]bool{}
	for _, v := range list {
		ap, err := netip.ParseAddrPort(v)
		if err != nil {
			return fmt.Errorf("lb: sync peer %q: %w", v, err)
		}
		want[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ap := range s.peers {
		if !want[ap] {
			delete(s.peers, ap)
		}
	}
	for ap := range want {
		if s.peers[ap] == nil {
			s.peers[ap] = &peerTable{addr: ap, conns: map[connEntry]uint32{}}
		}
	}
	return nil
}

// peerAddrs returns the peers' addresses.
func (s *connSync) peerAddrs(dst []netip.AddrPort) []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ap := range s.peers {
		dst = append(dst, ap)
	}
	return dst
}

func (s *connSync) close() {
	if s.udp != nil {
		s.udp.Close()
	}
	for _, fd := range []int{s.raw4, s.raw6} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// run sends, receives and watches for takeovers until ctx is done; then it closes the
// sockets.
func (s *connSync) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.send(ctx) })
	wg.Go(s.receive)
	wg.Go(func() { s.watchAddrs(ctx) })
	<-ctx.Done()
	s.udp.Close() // ends receive
	wg.Wait()
	s.close()
}

// carried returns the client connections this proxy carries.
func (p *Proxy) carried(dst []connEntry) []connEntry {
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	for _, b := range p.pool.backends {
		for s := range b.sessions {
			if s.conn.Client.IsValid() {
				dst = append(dst, s.conn)
			}
		}
	}
	return dst
}

// send sends the table every interval and heartbeats in between.
func (s *connSync) send(ctx context.Context) {
	beat := time.NewTicker(s.beat)
	defer beat.Stop()
	var round uint32
	var entries []connEntry
	var dgrams [][]byte
	nextTable := time.Now()
	hb := syncDatagram{Kind: syncHeartbeat, Boot: s.boot}
	var peers []netip.AddrPort
	for {
		now := time.Now()
		var out [][]byte
		if !now.Before(nextTable) {
			round++
			entries = s.p.carried(entries[:0])
			dgrams = splitTable(dgrams[:0], s.boot, round, entries)
			out = dgrams
			nextTable = now.Add(s.interval)
		} else {
			hb.Round = round
			b, _ := hb.MarshalBinary()
			out = [][]byte{b}
		}
		peers = s.peerAddrs(peers[:0])
		for _, peer := range peers {
			for _, b := range out {
				if _, err := s.udp.WriteToUDPAddrPort(b, peer); err == nil {
					s.sent.Add(1)
				} else if ctx.Err() == nil {
					s.log.Debug("sync datagram not sent", "peer", peer.String(), "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
		}
	}
}

// receive reads datagrams until the socket is closed.
func (s *connSync) receive() {
	buf := make([]byte, 64<<10)
	var d syncDatagram
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		s.mu.Lock()
		pt := s.peers[from]
		s.mu.Unlock()
		if pt == nil {
			s.unknownPeer.Add(1)
			continue
		}
		if err := d.UnmarshalBinary(buf[:n]); err != nil {
			s.malformed.Add(1)
			s.log.Debug("sync datagram dropped", "peer", from.String(), "err", err)
			continue
		}
		s.received.Add(1)
		s.mu.Lock()
		dropped := pt.apply(&d, time.Now())
		s.mu.Unlock()
		if dropped > 0 {
			s.tableFull.Add(uint64(dropped))
		}
	}
}

// watchAddrs follows the host's addresses; an address that appears is a takeover. When
// the subscription fails (the kernel dropped updates for want of buffer room, say), it
// subscribes again: an address bound meanwhile is then compared with the list taken at
// the new start, so a takeover in that gap goes unnoticed, and is logged as possible.
func (s *connSync) watchAddrs(ctx context.Context) {
	var local map[netip.Addr]bool
	for {
		err := s.followAddrs(ctx, &local)
		if ctx.Err() != nil {
			return
		}
		s.log.Error("following the host's addresses failed; subscribing again (a takeover meanwhile resets no connection)", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// followAddrs subscribes to address updates and handles them until ctx is done or the
// subscription fails; *local is the host's addresses, each with whether it is deprecated.
func (s *connSync) followAddrs(ctx context.Context, local *map[netip.Addr]bool) error {
	updates := make(chan netlink.AddrUpdate, 64)
	done := make(chan struct{})
	defer close(done)
	// The subscription's goroutine reports its errors here, and they are returned, so
	// that nothing is logged once this returns (closing done ends it with an error too).
	failed := make(chan error, 1)
	err := netlink.AddrSubscribeWithOptions(updates, done, netlink.AddrSubscribeOptions{
		ErrorCallback: func(err error) {
			select {
			case failed <- err:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	// Subscribed first, listed second: an address bound in between is in the list, and
	// its update is taken for a change of flags.
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return err
	}
	*local = map[netip.Addr]bool{} // address -> deprecated
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			(*local)[ip.Unmap()] = a.PreferedLft == 0
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case u, ok := <-updates:
			if !ok {
				return errors.New("lb: address updates ended")
			}
			ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			if !u.NewAddr {
				delete(*local, ip)
				continue
			}
			// A takeover is an address that appears, or one that vipd had kept deprecated
			// (preferred lifetime 0) for a handover drain and now asserts again: its
			// master returned the VIP to this host, or crashed while it was draining.
			deprecated := u.PreferedLft == 0
			was, known := (*local)[ip]
			(*local)[ip] = deprecated
			if deprecated || (known && !was) {
				continue // deprecated now, or a change of flags of an address in use
			}
			go s.takeover(ctx, ip, time.Now())
		}
	}
}

// takeover handles address ip appearing at at: it waits until each peer with connections
// on ip is known alive (heard from after at) or dead (silent for deadHeartbeats), and
// resets the connections of the dead ones.
func (s *connSync) takeover(ctx context.Context, ip netip.Addr, at time.Time) {
	pending := map[*peerTable]bool{}
	s.mu.Lock()
	for _, pt := range s.peers {
		for e := range pt.conns {
			if e.Local.Addr() == ip {
				pending[pt] = true
				break
			}
		}
	}
	s.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	s.takeovers.Add(1)
	dead := deadHeartbeats * s.beat
	tick := time.NewTicker(max(s.beat/4, 5*time.Millisecond))
	defer tick.Stop()
	for len(pending) > 0 {
		now := time.Now()
		for pt := range pending {
			s.mu.Lock()
			heard := pt.lastHeard
			s.mu.Unlock()
			switch {
			case heard.After(at):
				s.log.Info("took over an address a live peer still serves: its connections are left to it", "addr", ip.String(), "peer", pt.addr.String())
				delete(pending, pt)
			case now.Sub(heard) >= dead:
				delete(pending, pt)
				go s.resetPeer(ctx, pt, ip, at)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// resetPeer probes the clients of the connections pt reported on ip that this host does
// not carry, twice, and then forgets them.
func (s *connSync) resetPeer(ctx context.Context, pt *peerTable, ip netip.Addr, at time.Time) {
	var theirs []connEntry
	s.mu.Lock()
	for e := range pt.conns {
		if e.Local.Addr() == ip {
			theirs = append(theirs, e)
		}
	}
	s.mu.Unlock()
	var mine []connEntry
	sent := 0
	start := time.Now()
	for round := range 2 {
		if round > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(probeRepeat):
			}
		}
		mine = s.p.carried(mine[:0])
		own := make(map[connEntry]bool, len(mine))
		for _, e := range mine {
			own[e] = true
		}
		for _, e := range theirs {
			if own[e] {
				continue
			}
			if err := s.sendProbe(e); err != nil {
				s.probeErrors.Add(1)
				s.log.Debug("probe not sent", "client", e.Client.String(), "err", err)
				continue
			}
			s.probes.Add(1)
			if round == 0 {
				sent++
			}
		}
		if round == 0 {
			s.log.Warn("reset the connections a silent peer carried on an address this host took over",
				"addr", ip.String(), "peer", pt.addr.String(), "connections", sent,
				"after_takeover", start.Sub(at).Round(time.Microsecond), "took", time.Since(start).Round(time.Microsecond))
		}
	}
	s.mu.Lock()
	for _, e := range theirs {
		delete(pt.conns, e)
	}
	s.mu.Unlock()
}

// sendProbe sends the probe of connection e to its client.
func (s *connSync) sendProbe(e connEntry) error {
	pkt := probeSegment(e.Local, e.Client, rand.Uint32(), rand.Uint32())
	if pkt == nil {
		return fmt.Errorf("lb: probe %v: mixed address families", e)
	}
	if e.Client.Addr().Is4() {
		return unix.Sendto(s.raw4, pkt, 0, &unix.SockaddrInet4{Addr: e.Client.Addr().As4()})
	}
	if s.raw6 < 0 {
		return errors.New("lb: no IPv6 raw socket")
	}
	return unix.Sendto(s.raw6, pkt, 0, &unix.SockaddrInet6{Addr: e.Client.Addr().As16()})
}

// SyncPeerStatus is one peer in /status.
type SyncPeerStatus struct {
	Addr        string    `json:"addr"`
	Connections int       `json:"connections"` // connections it reported and were not reset here
	LastHeard   time.Time `json:"lastHeard"`   // zero: never
}

// SyncStatus is the connection-table sync in /status.
type SyncStatus struct {
	Listen            string           `json:"listen"`
	Peers             []SyncPeerStatus `json:"peers"`
	DatagramsSent     uint64           `json:"datagramsSent"`
	DatagramsReceived uint64           `json:"datagramsReceived"`
	Dropped           map[string]int64 `json:"dropped"` // by reason: malformed, unknown_peer, table_full (entries)
	Takeovers         uint64           `json:"takeovers"`
	ProbesSent        uint64           `json:"probesSent"`
	ProbeErrors       uint64           `json:"probeErrors"`
}

func (s *connSync) status() *SyncStatus {
	st := &SyncStatus{
		Listen:            s.udp.LocalAddr().String(),
		DatagramsSent:     s.sent.Load(),
		DatagramsReceived: s.received.Load(),
		Dropped: map[string]int64{
			dropMalformed:   int64(s.malformed.Load()),
			dropUnknownPeer: int64(s.unknownPeer.Load()),
			dropTableFull:   int64(s.tableFull.Load()),
		},
		Takeovers:   s.takeovers.Load(),
		ProbesSent:  s.probes.Load(),
		ProbeErrors: s.probeErrors.Load(),
	}
	s.mu.Lock()
	for _, pt := range s.peers {
		st.Peers = append(st.Peers, SyncPeerStatus{Addr: pt.addr.String(), Connections: len(pt.conns), LastHeard: pt.lastHeard})
	}
	s.mu.Unlock()
	return st
}

// connOf returns the addresses of the accepted client socket fd, whose client is peer
// (as accept4 told it), or the zero entry when the kernel does not tell. Loopback
// connections are kept too: they cost a few bytes in a table, and no takeover is ever
// seen for a loopback address.
func connOf(fd int, peer netip.AddrPort) connEntry {
	e := connEntry{Client: peer, Local: sockAddrPort(fd, false)}
	if !e.valid() {
		return connEntry{}
	}
	return e
}
