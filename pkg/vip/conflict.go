package vip

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hacp/hacp/pkg/vrrp"
)

// conflictWatch looks for a second holder of an instance's addresses: a router that answers
// ARP or NDP for them while it is not the master of our election (a keepalived with another
// password, another VRID advertising them, a host with the address configured by hand). The
// decision is vrrp.Conflicts'; this is the host side: probes, metrics, log and yielding.
type conflictWatch struct {
	probe    *prober
	every    time.Duration // the probe interval; 0: listen only
	tick     time.Duration // how often the signs are weighed
	yieldFor time.Duration // a yielding instance holds in BACKUP this long after the last sign

	mu sync.Mutex
	c  *vrrp.Conflicts

	yielding bool // run's goroutine only
}

// newConflictWatch sizes the detector for r: a sign counts for three probe or advert
// intervals; claims count once they go on for half a probe interval (two answers), and not
// for a grace period after a change of master that covers the old master's linger and
// drain (it keeps the address, deprecated) and its hearing of the new master.
func newConflictWatch(in *instance) (*conflictWatch, error) {
	g, r := in.g, in.r
	w := &conflictWatch{every: g.ConflictProbe, tick: g.ConflictProbe}
	if w.tick == 0 {
		w.tick = time.Second
	}
	hold := 3 * max(w.tick, r.Interval)
	w.yieldFor = 2 * hold
	var vips []netip.Addr
	for _, p := range in.allVIPs() {
		if !slices.Contains(vips, p.Addr()) {
			vips = append(vips, p.Addr())
		}
	}
	w.c = vrrp.NewConflicts(vrrp.ConflictConfig{VIPs: vips, Hold: hold, Grace: g.HandoverDrain + 3*r.Interval + w.tick, Confirm: w.tick / 2})
	w.c.SetOwn(append(ownMACs(), in.ifi.HardwareAddr))
	var err error
	if w.probe, err = newProber(in.ifi, vips, in.log, w.claim); err != nil {
		return nil, err
	}
	for _, v := range vips {
		in.d.metrics.conflict.WithLabelValues(r.Name, v.String()).Set(0)
		in.d.metrics.conflicts.WithLabelValues(r.Name, v.String()).Add(0)
	}
	return w, nil
}

func (w *conflictWatch) claim(vip netip.Addr, mac net.HardwareAddr, kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.c.Claim(vip, mac, kind, time.Now())
}

// dropped hands an advert the filter refused to the detector.
func (w *conflictWatch) dropped(rc received, reason string, p *vrrp.Packet) {
	if p == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.c.Dropped(rc.src.WithZone(""), reason, p.Priority, p.Interval(), p.Addrs, rc.at)
}

// observe tells the detector the state and master after the state machine's actions.
func (in *instance) observeConflicts(now time.Time) {
	w := in.cw
	w.mu.Lock()
	defer w.mu.Unlock()
	w.c.Observe(in.m.State(), in.m.MasterAddr(), now)
}

// checkConflicts runs every tick on run's goroutine: it probes (as MASTER or BACKUP),
// weighs the signs, logs and counts the episodes that start or end, and yields if asked to.
func (in *instance) checkConflicts() {
	w := in.cw
	in.readPending() // a new master's advert that came with its gratuitous ARP goes first
	now := time.Now()
	if st := in.m.State(); w.every > 0 && (st == vrrp.Master || st == vrrp.Backup) {
		if err := w.probe.probe(); err != nil {
			in.log.Debug("conflict probe not sent", "err", err.Error())
		}
	}
	w.mu.Lock()
	if own := ownMACs(); len(own) > 0 {
		w.c.SetOwn(append(own, in.ifi.HardwareAddr))
	}
	w.c.Observe(in.m.State(), in.m.MasterAddr(), now)
	changes := w.c.Update(now)
	current := w.c.Current(now)
	foreign := w.c.Foreign(now)
	episodes := uint64(0)
	for _, p := range in.allVIPs() {
		episodes += w.c.Episodes(p.Addr())
	}
	w.mu.Unlock()

	for _, ch := range changes {
		vip := ch.VIP.String()
		if ch.Start {
			in.log.Error("VIP conflict: another host holds the virtual address", "vip", vip, "state", in.m.State().String(),
				"macs", strings.Join(ch.MACs, ","), "adverts_dropped_from", strings.Join(ch.Senders, ","))
			in.d.metrics.conflict.WithLabelValues(in.r.Name, vip).Set(1)
			in.d.metrics.conflicts.WithLabelValues(in.r.Name, vip).Inc()
			continue
		}
		in.log.Warn("VIP conflict over", "vip", vip, "lasted", now.Sub(ch.Since).Round(time.Millisecond).String(), "state", in.m.State().String())
		in.d.metrics.conflict.WithLabelValues(in.r.Name, vip).Set(0)
	}
	in.mu.Lock()
	in.st.Conflict, in.st.Conflicts, in.st.ConflictEpisodes = len(current) > 0, current, episodes
	in.mu.Unlock()
	if in.g.YieldOnConflict {
		in.yieldIfAsked(now, current, foreign)
	}
}

// yieldIfAsked (--yield-on-conflict) makes a MASTER in conflict step down, and keeps it in
// BACKUP while another holder still answers for the addresses or advertises them.
func (in *instance) yieldIfAsked(now time.Time, current []vrrp.VIPConflict, foreign bool) {
	w := in.cw
	switch st := in.m.State(); {
	case st == vrrp.Master && len(current) > 0:
		w.yielding = true
		var vips []string
		for _, c := range current {
			vips = append(vips, c.VIP.String())
		}
		reason := "conflict: yielding " + strings.Join(vips, ",") + " to another holder (--yield-on-conflict)"
		in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvYield, Until: now.Add(w.yieldFor), Reason: reason}, now), now)
	case w.yielding && st == vrrp.Backup && foreign:
		in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvYield, Until: now.Add(w.yieldFor)}, now), now)
	case w.yielding && !foreign:
		w.yielding = false // the hold runs out; the election decides again
	}
}

// forgetConflicts removes the instance's series when it stops (a reload may remove it).
func (in *instance) forgetConflicts() {
	in.cw.probe.Close()
	for _, p := range in.allVIPs() {
		in.d.metrics.conflict.DeleteLabelValues(in.r.Name, p.Addr().String())
		in.d.metrics.conflicts.DeleteLabelValues(in.r.Name, p.Addr().String())
	}
}
