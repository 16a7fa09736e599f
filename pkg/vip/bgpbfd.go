package vip

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hacp/hacp/pkg/bfd"
)

// BFD in BGP mode (--bfd): one single-hop session per BGP peer. The point is the router's
// side: its bfdd hears nothing from a crashed or frozen vipd for detect multiplier x
// interval and takes the BGP session, and with it this host's routes, down then instead
// of at the hold timer. This side tears down the BGP session of a peer whose BFD session
// goes down (RFC 5882 4.3), rather than sending into a dead path until the hold timer.

// startBFD starts a session with every peer. The sessions outlive ctx (run's): they stop
// in stopBFD, after the BGP sessions have closed, so that a SIGTERM's withdrawals are
// never raced by a BFD AdminDown.
func (b *bgpRunner) startBFD() error {
	if b.bfd == nil {
		return nil
	}
	for _, p := range b.r.Speaker.Peers {
		if _, err := b.bfd.Add(context.Background(), bfd.SessionConfig{Peer: p.Addr, Local: p.Source, Timers: *b.r.BFD}); err != nil {
			b.bfd.Close()
			return fmt.Errorf("vip: %w", err)
		}
	}
	b.d.log.Info("BFD sessions started", "peers", len(b.r.Speaker.Peers), "interval", b.r.BFD.DesiredMinTx.String(), "multiplier", b.r.BFD.DetectMult)
	return nil
}

func (b *bgpRunner) stopBFD() {
	if b.bfd != nil {
		b.bfd.Close()
	}
}

// bfdChanged is told of every BFD state change; a session that leaves Up (the peer
// stopped answering, or said its session is down) takes the BGP session down with it.
func (b *bgpRunner) bfdChanged(peer netip.Addr, from, to bfd.State, diag bfd.Diag) {
	if from != bfd.Up || to == bfd.AdminDown {
		return
	}
	b.mu.Lock()
	spk := b.spk
	b.mu.Unlock()
	b.d.log.Warn("BFD session down: resetting the BGP session", "peer", peer.String(), "diagnostic", diag.String())
	if spk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := spk.ResetPeer(ctx, peer, "BFD down: "+diag.String()); err != nil {
		b.d.log.Warn("cannot reset the BGP session after BFD went down", "peer", peer.String(), "err", err.Error())
	}
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
