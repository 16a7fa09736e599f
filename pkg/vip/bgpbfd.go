package vip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hacp/hacp/pkg/bfd"
	"github.com/hacp/hacp/pkg/bgp"
)

// BFD in BGP mode (--bfd): one single-hop session per BGP peer. The point is the router's
// side: its bfdd hears nothing from a crashed or frozen vipd for detect multiplier x
// interval and takes the BGP session, and with it this host's routes, down then instead
// of at the hold timer. This side tears down the BGP session of a peer whose BFD session
// goes down (RFC 5882 4.3), rather than sending into a dead path until the hold timer.

// startBFD checks that the BFD port can be opened (another BFD daemon on the host is a
// configuration error). The sessions start one by one in bgpSessionChanged.
func (b *bgpRunner) startBFD() error {
	if b.bfd == nil {
		return nil
	}
	for _, is4 := range []bool{true, false} {
		for _, p := range b.r.Speaker.Peers {
			if p.Addr.Is4() == is4 {
				if err := b.bfd.Listen(is4); err != nil {
					return fmt.Errorf("vip: %w", err)
				}
				break
			}
		}
	}
	return nil
}

// bgpSessionChanged starts the BFD session with a peer when its BGP session is first
// established; from then on it runs until vipd stops. Not before: FRR's bgpd resets a
// BFD session that is Up when the BGP session comes up ("reset bfd session when bgp comes
// up", since FRR 7.4) and, before FRR 10.2, tears that BGP session down for it (FRR issue
// 17337): one needless flap at every start. A BFD session that only starts once BGP is
// up avoids that. The sessions outlive run's context: they stop in stopBFD, after the BGP
// sessions have closed, so that a SIGTERM's withdrawals are never raced by an AdminDown.
//
// A session that goes down once BFD runs is opened again at once (see reconnect).
func (b *bgpRunner) bgpSessionChanged(peer netip.Addr, established bool) {
	if b.bfd == nil {
		return
	}
	if !established {
		if b.bfd.Session(peer) != nil { // it was established before
			go b.reconnect(peer, reconnectDown)
		}
		return
	}
	b.mu.Lock()
	delete(b.reconnected, peer)
	b.mu.Unlock()
	for _, p := range b.r.Speaker.Peers {
		if p.Addr != peer || b.bfd.Session(peer) != nil {
			continue
		}
		if _, err := b.bfd.Add(context.Background(), bfd.SessionConfig{Peer: p.Addr, Local: p.Source, Timers: *b.r.BFD}); err != nil {
			b.d.log.Error("cannot start the BFD session", "peer", peer.String(), "err", err.Error())
			return
		}
		b.d.log.Info("BFD session started", "peer", peer.String(), "interval", b.r.BFD.DesiredMinTx.String(), "multiplier", b.r.BFD.DetectMult)
	}
}

func (b *bgpRunner) stopBFD() {
	if b.bfd != nil {
		b.bfd.Close()
	}
}

// bfdChanged is told of every BFD state change; a session that leaves Up (the peer
// stopped answering, or said its session is down) takes the BGP session down with it
// (RFC 5882 4.3), except where the peer only reset its BFD session while the path works:
//   - it replaced the session (a new discriminator: its bfdd restarted);
//   - it said Down, and our BFD session had come Up before the BGP session was
//     established: FRR's bgpd resets the BFD session when the BGP session comes up (since
//     FRR 7.4, "reset bfd session when bgp comes up"), and FRR 10.2 stopped tearing BGP
//     down for that Down for the same reason (FRR issue 17337). A peer that signals Down
//     for a real failure tears its BGP session down itself; our own detection timeout
//     always resets.
//
// A session that comes Up opens the peer's BGP session again at once if it is down.
func (b *bgpRunner) bfdChanged(c bfd.Change) {
	peer, diag := c.Peer, c.Diag
	if c.To == bfd.Up {
		go b.reconnect(peer, reconnectBFDUp)
		return
	}
	if c.From != bfd.Up || c.To == bfd.AdminDown {
		return
	}
	b.mu.Lock()
	spk := b.spk
	b.mu.Unlock()
	if spk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if why := b.keepBGP(ctx, spk, c); why != "" {
		b.d.log.Info("BFD session down, BGP session kept: "+why, "peer", peer.String(), "diagnostic", diag.String())
		return
	}
	b.d.log.Warn("BFD session down: resetting the BGP session", "peer", peer.String(), "diagnostic", diag.String())
	if err := spk.ResetPeer(ctx, peer, "BFD down: "+diag.String()); err != nil {
		b.d.log.Warn("cannot reset the BGP session after BFD went down", "peer", peer.String(), "err", err.Error())
	}
}

// The moments reconnect acts on, each once until the session is established again.
const (
	reconnectDown  = 1 << iota // the BGP session went down
	reconnectBFDUp             // the BFD session came Up
)

// reconnect opens the BGP session with peer again at once rather than after GoBGP's idle
// hold (5 s after a NOTIFICATION, 1 s after vipd's own reset) and its 1-2 s wait before
// the first attempt. A false BFD Down (the router or this host starved of CPU for 0.3 s)
// made the router's bgpd close the session (Cease/BFD Down) while BFD was Up again within
// milliseconds; the route then stayed away 2-7 s. when says why now: when the session
// goes down, so that it is active, and with --bgp-listen-port accepts the router's
// connection (FRR's bgpd connects as soon as its BFD session comes Up); when the BFD
// session comes Up, so that it is tried now, unless the speaker listens and the session is
// active already, ready for the router's connection. Each once per down period: a peer
// that keeps closing the session gets GoBGP's usual idle hold and retries after that.
func (b *bgpRunner) reconnect(peer netip.Addr, when int) {
	b.mu.Lock()
	spk := b.spk
	if spk == nil || b.reconnected[peer]&when != 0 {
		b.mu.Unlock()
		return
	}
	b.reconnected[peer] |= when
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evenActive := when == reconnectBFDUp && b.r.Speaker.ListenPort == 0
	replaced, err := spk.Reconnect(ctx, peer, evenActive)
	switch {
	case err != nil:
		if !errors.Is(err, bgp.ErrStopped) {
			b.d.log.Error("cannot open the BGP session again", "peer", peer.String(), "err", err.Error())
		}
	case replaced:
		why := map[int]string{reconnectDown: "BGP session down", reconnectBFDUp: "BFD session up"}[when]
		b.d.log.Info(why+": opening the BGP session again now", "peer", peer.String())
	default: // established, being opened, or active and listening: this moment may come again
		b.mu.Lock()
		b.reconnected[peer] &^= when
		b.mu.Unlock()
	}
}

// keepBGP says why a BFD session that left Up does not take the BGP session down ("": it
// does).
func (b *bgpRunner) keepBGP(ctx context.Context, spk *bgp.Speaker, c bfd.Change) string {
	if c.PeerRestarted {
		return "the peer started a new BFD session"
	}
	if c.Diag != bfd.DiagNeighborDown {
		return ""
	}
	peers, err := spk.Peers(ctx)
	if err != nil {
		return ""
	}
	for _, p := range peers {
		if p.Address == c.Peer.String() && p.Established() && !c.UpSince.After(p.Since) {
			return "the peer reset its BFD session as the BGP session came up"
		}
	}
	return ""
}

// bfdStatus returns the sessions, in peer order; nil without --bfd.
func (b *bgpRunner) bfdStatus() []bfd.SessionStatus {
	if b.bfd == nil {
		return nil
	}
	ss := b.bfd.Sessions()
	sort.Slice(ss, func(i, j int) bool { return ss[i].Peer < ss[j].Peer })
	return ss
}

// bfdCollector reports the BFD sessions at scrape time.
type bfdCollector struct{ b *bgpRunner }

var (
	bfdState = prometheus.NewDesc("vipd_bfd_session_state",
		"BGP mode with --bfd: the BFD session's state: 0 AdminDown, 1 Down, 2 Init, 3 Up.", []string{"peer"}, nil)
	bfdIn = prometheus.NewDesc("vipd_bfd_packets_received_total",
		"BGP mode with --bfd: BFD control packets accepted from the peer.", []string{"peer"}, nil)
	bfdOut = prometheus.NewDesc("vipd_bfd_packets_sent_total",
		"BGP mode with --bfd: BFD control packets sent to the peer.", []string{"peer"}, nil)
	bfdFlaps = prometheus.NewDesc("vipd_bfd_session_flaps_total",
		"BGP mode with --bfd: times the BFD session went down from Up.", []string{"peer"}, nil)
	bfdDropped = prometheus.NewDesc("vipd_bfd_packets_dropped_total",
		"BGP mode with --bfd: received BFD packets dropped, by reason (malformed, ttl, no-session, discriminator, admin-down, queue-full).", []string{"reason"}, nil)
)

func (c bfdCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{bfdState, bfdIn, bfdOut, bfdFlaps, bfdDropped} {
		ch <- d
	}
}

func (c bfdCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.b.bfdStatus() {
		ch <- prometheus.MustNewConstMetric(bfdState, prometheus.GaugeValue, float64(s.StateValue), s.Peer)
		ch <- prometheus.MustNewConstMetric(bfdIn, prometheus.CounterValue, float64(s.PacketsIn), s.Peer)
		ch <- prometheus.MustNewConstMetric(bfdOut, prometheus.CounterValue, float64(s.PacketsOut), s.Peer)
		ch <- prometheus.MustNewConstMetric(bfdFlaps, prometheus.CounterValue, float64(s.Flaps), s.Peer)
	}
	drops := c.b.bfd.Drops()
	for _, r := range []bfd.DropReason{bfd.DropMalformed, bfd.DropTTL, bfd.DropNoSession, bfd.DropDiscr, bfd.DropAdminDown, bfd.DropQueue} {
		ch <- prometheus.MustNewConstMetric(bfdDropped, prometheus.CounterValue, float64(drops[r]), string(r))
	}
}
