package vip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/vrrp"
)

// instance runs one virtual router: its socket, its state machine and its addresses. All
// state-machine events are handled on the goroutine of run, in order.
type instance struct {
	d      *Daemon
	g      *Config // the daemon-wide settings this instance was started with
	r      Resolved
	log    *slog.Logger
	ifi    *net.Interface
	self   netip.Addr // source of our adverts and the tie-breaking primary address
	conn   advertConn
	ann    *announcer
	binder addrBinder
	filter vrrp.Filter
	m      *vrrp.Machine
	cw     *conflictWatch

	settleBurst atomic.Bool // the burst that follows a takeover or re-assertion is pending

	adverts chan advert   // valid adverts, in the order they came, for run
	space   chan struct{} // run took an advert: the reader may go on after a full adverts
	peers   map[netip.Addr]bool
	recheck chan struct{} // health or link state changed
	done    chan struct{}

	released time.Time // when the addresses were last released to a new master (run's goroutine)

	mu         sync.Mutex
	st         InstanceStatus
	masterGen  uint64 // bumped on every transition; stops stale GARP bursts
	lastMaster time.Time
}

// InstanceStatus is the /status view of one instance.
type InstanceStatus struct {
	Name              string            `json:"name"`
	Iface             string            `json:"iface"`
	VRID              uint8             `json:"vrid"`
	Version           uint8             `json:"version"`
	VIPs              []string          `json:"vips"`
	State             string            `json:"state"`
	Priority          uint8             `json:"priority"`
	EffectivePriority uint8             `json:"effectivePriority"`
	MasterAddr        string            `json:"masterAddr,omitempty"`
	MasterPriority    uint8             `json:"masterPriority"`
	LastTransition    time.Time         `json:"lastTransition"`
	LastReason        string            `json:"lastReason,omitempty"`
	Transitions       uint64            `json:"transitions"`
	AdvertsSent       uint64            `json:"advertsSent"`
	AdvertsReceived   uint64            `json:"advertsReceived"`
	Dropped           map[string]uint64 `json:"dropped"`
	IntervalMismatch  uint64            `json:"intervalMismatch"`
	HoldUntil         time.Time         `json:"holdUntil,omitzero"`
	Fault             string            `json:"fault,omitempty"`
	// LastTakeover times the last MASTER transition: when the addresses were bound and
	// when the first gratuitous ARP left.
	LastTakeover *Takeover `json:"lastTakeover,omitempty"`
	// LastHandover times the last make-before-break shutdown (LEAVING).
	LastHandover *Handover `json:"lastHandover,omitempty"`
	// Conflict is true while another host holds one of the VIPs (Conflicts says which,
	// since when, who and how it was seen); ConflictEpisodes counts the episodes.
	Conflict         bool               `json:"conflict"`
	Conflicts        []vrrp.VIPConflict `json:"conflicts,omitempty"`
	ConflictEpisodes uint64             `json:"conflictEpisodes"`
}

// Handover records one make-before-break shutdown: from the priority 0 advert until the
// addresses went (to the new master, or after the timeout).
type Handover struct {
	Started  time.Time `json:"started"`
	Released time.Time `json:"released,omitzero"`
	To       string    `json:"to,omitempty"` // the new master, "" after a timeout
	HeldS    float64   `json:"heldSeconds"`  // Started -> Released
}

// Takeover records the host-side timing of one transition to MASTER.
type Takeover struct {
	At             time.Time `json:"at"`
	AddrsBound     time.Time `json:"addrsBound"`
	FirstAnnounce  time.Time `json:"firstAnnounce"`
	AnnounceDelayS float64   `json:"announceDelaySeconds"` // AddrsBound -> FirstAnnounce
}

func newInstance(d *Daemon, g *Config, r Resolved) (*instance, error) {
	ifi, err := net.InterfaceByName(r.Iface)
	if err != nil {
		return nil, fmt.Errorf("vip: instance %s: there is no interface %q on this host (check --iface)", r.Name, r.Iface)
	}
	self := r.UnicastSrc
	if !self.IsValid() {
		if self, err = primaryAddr(r.Iface, r.IPv6, append(r.VIPs, r.ExtraVIPs...)); err != nil {
			return nil, fmt.Errorf("vip: instance %s: %w", r.Name, err)
		}
	}
	lifetime := g.VIPLifetime
	if lifetime == 0 {
		lifetime = max(2*time.Second, 5*r.Interval)
	}
	in := &instance{
		d:       d,
		g:       g,
		r:       r,
		log:     d.log.With("instance", r.Name),
		ifi:     ifi,
		self:    self,
		binder:  addrBinder{iface: r.Iface, label: r.Label, lifetime: lifetime, resetConns: g.ResetConns, log: d.log.With("instance", r.Name)},
		filter:  vrrp.Filter{Version: r.Version, VRID: r.VRID, AuthPass: r.AuthPass, Interval: r.Interval},
		adverts: make(chan advert, 64),
		space:   make(chan struct{}, 1),
		peers:   map[netip.Addr]bool{},
		recheck: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	in.m = vrrp.NewMachine(vrrp.MachineConfig{
		Version: r.Version, Priority: r.Priority, Interval: r.Interval, Addr: self,
		Preempt: r.Preempt, PreemptDelay: r.PreemptDelay,
		FlapMax: g.FlapMax, FlapWindow: g.FlapWindow, FlapHold: g.FlapHold,
		Handover: handoverTimeout(g.HandoverTimeout, r),
		// A backup taking over from a leaving or silent master advertises, waits a tenth of
		// an interval for a better router's advert, then binds and announces; a leaving
		// master keeps the VIP for half an interval after that first advert, which covers it.
		TakeoverSettle: r.Interval / 10,
		HandoverLinger: r.Interval / 2,
	})
	for _, p := range r.UnicastPeers {
		in.peers[p] = true
	}
	in.st = InstanceStatus{Name: r.Name, Iface: r.Iface, VRID: r.VRID, Version: r.Version, Priority: r.Priority,
		EffectivePriority: r.Priority, State: vrrp.Initialize.String(), Dropped: map[string]uint64{}}
	for _, p := range append(r.VIPs, r.ExtraVIPs...) {
		in.st.VIPs = append(in.st.VIPs, p.String())
	}
	if in.conn, err = listenAdverts(ifi, r.IPv6, len(r.UnicastPeers) > 0); err != nil {
		return nil, err
	}
	if in.ann, err = newAnnouncer(ifi); err != nil {
		in.conn.Close()
		return nil, err
	}
	if in.cw, err = newConflictWatch(in); err != nil {
		in.conn.Close()
		in.ann.Close()
		return nil, err
	}
	return in, nil
}

// handoverTimeout is the make-before-break bound for r: set (>0), off (<0), or by default
// long enough for the slowest backup to notice a lost priority 0 advert and take over.
func handoverTimeout(set time.Duration, r Resolved) time.Duration {
	switch {
	case set < 0:
		return 0
	case set > 0:
		return set
	}
	return vrrp.MasterDownInterval(r.Version, 1, r.Interval) + r.Interval
}

func (in *instance) allVIPs() []netip.Prefix {
	return append(append([]netip.Prefix{}, in.r.VIPs...), in.r.ExtraVIPs...)
}

// run drives the state machine until ctx ends, then shuts the instance down: a master sends
// a priority 0 advert and, once a new master has advertised (or the handover timeout
// passed), lets its addresses go; connections still on them are reset after the drain.
func (in *instance) run(ctx context.Context) {
	defer close(in.done)
	defer in.forgetConflicts()
	defer in.ann.Close()
	defer in.conn.Close()
	// Adverts are read until run returns: a leaving master waits for its successor's.
	readCtx, stopRead := context.WithCancel(context.Background())
	defer stopRead()
	go in.readLoop(readCtx)

	// Addresses and forwarding left by a killed predecessor are not ours until we win an
	// election.
	if err := in.binder.remove(in.allVIPs()); err != nil {
		in.log.Warn("cannot remove stale virtual addresses", "err", err.Error())
	}
	in.stopForward()
	now := time.Now()
	in.applyHost(now)
	in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvStartup, Reason: in.faultReason()}, now), now)

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	refresh := time.NewTicker(in.binder.lifetime / 4)
	defer refresh.Stop()
	var garpRefresh <-chan time.Time
	if in.g.GARPRefresh > 0 {
		t := time.NewTicker(in.g.GARPRefresh)
		defer t.Stop()
		garpRefresh = t.C
	}
	conflictTick := time.NewTicker(in.cw.tick)
	defer conflictTick.Stop()
	stopping := ctx.Done()
	for {
		if stopping == nil && in.m.State() != vrrp.Leaving {
			in.drainReleased()
			return
		}
		if next := in.m.Next(); !next.IsZero() {
			timer.Reset(time.Until(next))
		} else {
			timer.Stop()
		}
		select {
		case <-stopping:
			stopping = nil
			now := time.Now()
			in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvShutdown}, now), now)
		case a := <-in.adverts:
			in.handleAdvert(a)
		case <-in.recheck:
			now := time.Now()
			in.applyHost(now)
		case <-timer.C:
			in.readPending()
			now := time.Now()
			in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvTimer}, now), now)
		case <-refresh.C:
			var err error
			switch {
			case in.m.Bound():
				err = in.binder.add(in.allVIPs())
			case in.m.State() == vrrp.Leaving:
				err = in.binder.deprecate(in.allVIPs())
			}
			if err != nil {
				in.log.Error("cannot refresh virtual addresses", "err", err.Error())
			}
		case <-garpRefresh:
			if in.m.Bound() {
				go in.burst(in.gen())
			}
		case <-conflictTick.C:
			in.checkConflicts()
		}
	}
}

// faultReason says why the instance must be in FAULT, or "".
func (in *instance) faultReason() string {
	for _, name := range append([]string{in.r.Iface}, in.r.TrackIfaces...) {
		if !in.d.linkUp(name) {
			return "link " + name + " down"
		}
	}
	if in.g.CheckAction == "fault" && !in.d.healthy() {
		return "health check failing"
	}
	return ""
}

// applyHost feeds the current link and health state to the state machine.
func (in *instance) applyHost(now time.Time) {
	reason := in.faultReason()
	in.mu.Lock()
	in.st.Fault = reason
	in.mu.Unlock()
	if reason != "" {
		in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvFault, Fault: true, Reason: reason}, now), now)
	} else {
		in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvFault, Fault: false, Reason: "links up and checks passing"}, now), now)
	}
	// keepalived's weight: a negative one applies while the check fails, a positive one
	// while it passes.
	prio := int(in.r.Priority)
	checked := in.g.CheckURL != "" || in.g.CheckExec != ""
	if w := in.g.CheckWeight; checked && in.g.CheckAction == "weight" && w != 0 && (w < 0) != in.d.healthy() {
		prio = min(max(prio+w, 1), 254)
	}
	in.exec(in.m.Handle(vrrp.Event{Kind: vrrp.EvPriority, Priority: uint8(prio)}, now), now)
}

func (in *instance) wake() {
	select {
	case in.recheck <- struct{}{}:
	default:
	}
}

// noteMaster accounts the time spent without a master (the gap since the last sign of one,
// beyond one advert interval) and records now as the latest sign.
func (in *instance) noteMaster(now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.lastMaster.IsZero() {
		if gap := now.Sub(in.lastMaster) - in.r.Interval; gap > in.r.Interval {
			in.d.metrics.masterless.WithLabelValues(in.r.Name).Add(gap.Seconds())
		}
	}
	in.lastMaster = now
}

func (in *instance) gen() uint64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.masterGen
}

// exec carries out the state machine's actions in order.
func (in *instance) exec(acts []vrrp.Action, now time.Time) {
	announced := false
	defer func() {
		if !announced {
			return
		}
		gen := in.gen() // after the transition, so the burst knows its mastership
		in.announceRest(gen)
		// Backups whose master-down timers fire within a millisecond of each other (priorities
		// 100 and 99 differ by 0.4 ms of skew at 100 ms adverts) both take over, and the
		// loser's announcements may reach hosts after ours. It steps down as soon as our
		// advert reaches it, so announce once more two advert intervals later, instead of
		// leaving hosts pointed at it until the repeat burst. The same holds after
		// re-asserting against a lower-priority router that claimed the VIP.
		if in.settleBurst.CompareAndSwap(false, true) {
			go func() {
				defer in.settleBurst.Store(false)
				if in.sleepAsMaster(2*in.r.Interval, gen) {
					in.burst(gen)
				}
			}()
		}
	}()
	for _, a := range acts {
		switch a.Kind {
		case vrrp.ActSendAdvert:
			if err := in.sendAdvert(a.Priority); err != nil {
				in.log.Error("advert not sent", "err", err.Error())
			}
		case vrrp.ActAddAddrs:
			if err := in.binder.add(in.allVIPs()); err != nil {
				in.log.Error("cannot bind virtual addresses", "err", err.Error())
			}
			in.mu.Lock()
			in.st.LastTakeover = &Takeover{At: now, AddrsBound: time.Now()}
			in.mu.Unlock()
		case vrrp.ActRemoveAddrs:
			if err := in.binder.remove(in.allVIPs()); err != nil {
				in.log.Error("cannot remove virtual addresses", "err", err.Error())
			}
		case vrrp.ActReleaseAddrs:
			in.release()
		case vrrp.ActAnnounce:
			in.announceNow()
			announced = true
		case vrrp.ActTransition:
			if a.To == vrrp.Master && in.g.HandoverDrain > 0 {
				if old := in.m.HandedOverBy(); old.IsValid() {
					// The old master keeps our future clients' connections for its drain
					// (and its linger before it): cover both, with an interval to spare.
					in.forwardFor(old, in.g.HandoverDrain+in.r.Interval)
				}
			}
			if a.To == vrrp.Leaving {
				if err := in.binder.deprecate(in.allVIPs()); err != nil {
					in.log.Error("cannot mark the virtual addresses deprecated", "err", err.Error())
				}
			}
			in.transition(a, now)
		case vrrp.ActHoldDown:
			in.log.Warn("flap damping: holding in BACKUP", "until", a.Until.Format(time.RFC3339), "reason", a.Reason)
		}
	}
	in.mu.Lock()
	in.st.State = in.m.State().String()
	in.st.EffectivePriority = in.m.Priority()
	if ma := in.m.MasterAddr(); ma.IsValid() {
		in.st.MasterAddr = ma.String()
	}
	in.st.MasterPriority = in.m.MasterPriority()
	if in.m.State() == vrrp.Master {
		in.st.MasterPriority = in.m.Priority()
	}
	in.st.HoldUntil = in.m.HoldUntil()
	in.mu.Unlock()
	in.d.metrics.priority.WithLabelValues(in.r.Name).Set(float64(in.m.Priority()))
	in.observeConflicts(now)
}

// release lets the addresses go to the master whose advert just arrived (it has bound and
// announced them before advertising). With a drain, the connections on them are not reset
// yet: a response in flight through the local lbproxy still reaches its client. They are
// reset after the drain (drainReleased on shutdown, resetLater otherwise).
func (in *instance) release() {
	vips := in.allVIPs()
	if in.g.HandoverDrain <= 0 {
		if err := in.binder.remove(vips); err != nil {
			in.log.Error("cannot remove virtual addresses", "err", err.Error())
		}
		return
	}
	// Kept, deprecated, for the drain: the new master passes the packets of our connections
	// back (forwardFor), and what they send leaves from the address.
	if err := in.binder.deprecate(vips); err != nil {
		in.log.Error("cannot mark the virtual addresses deprecated", "err", err.Error())
	}
	in.released = time.Now()
	if in.m.State() == vrrp.Leaving || in.m.State() == vrrp.Initialize {
		return // shutting down: run resets and unbinds after the drain, before it returns
	}
	go in.resetLater(in.gen()+1, in.released) // +1: the transition that follows this action
}

// resetLater resets the connections left on the released addresses once the drain is over,
// unless the instance has become master again (its new connections are not to be cut).
func (in *instance) resetLater(gen uint64, released time.Time) {
	select {
	case <-time.After(time.Until(released.Add(in.g.HandoverDrain))):
	case <-in.done:
		return
	}
	in.mu.Lock()
	still := in.masterGen == gen
	in.mu.Unlock()
	if still {
		in.binder.reset(in.allVIPs())
		if err := in.binder.unbind(in.allVIPs()); err != nil {
			in.log.Error("cannot remove virtual addresses", "err", err.Error())
		}
	}
}

// drainReleased, on shutdown after a release, waits out the drain and resets what is left.
func (in *instance) drainReleased() {
	if in.released.IsZero() {
		return
	}
	time.Sleep(time.Until(in.released.Add(in.g.HandoverDrain))) // bounded by --handover-drain
	in.binder.reset(in.allVIPs())
	if err := in.binder.unbind(in.allVIPs()); err != nil {
		in.log.Error("cannot remove virtual addresses", "err", err.Error())
	}
}

func (in *instance) sendAdvert(prio uint8) error {
	p := &vrrp.Packet{Version: in.r.Version, Type: vrrp.TypeAdvertisement, VRID: in.r.VRID, Priority: prio}
	if err := p.SetInterval(in.r.Interval); err != nil {
		return err
	}
	if in.r.Version == 2 {
		p.SetPassword(in.r.AuthPass)
	}
	for _, v := range in.r.VIPs {
		p.Addrs = append(p.Addrs, v.Addr())
	}
	dsts := in.r.UnicastPeers
	if len(dsts) == 0 {
		dsts = []netip.Addr{vrrp.MulticastGroupV4}
		if in.r.IPv6 {
			dsts = []netip.Addr{vrrp.MulticastGroupV6}
		}
	}
	var errs []error
	for _, dst := range dsts {
		b, err := vrrp.Encode(p, in.self, dst, in.r.Checksum)
		if err != nil {
			return err
		}
		if err := in.conn.send(in.self, dst, b); err != nil {
			errs = append(errs, err)
			continue
		}
		in.d.metrics.sent.WithLabelValues(in.r.Name).Inc()
		in.mu.Lock()
		in.st.AdvertsSent++
		in.mu.Unlock()
	}
	if prio > 0 {
		in.noteMaster(time.Now())
	}
	return errors.Join(errs...)
}

// announceNow sends the first gratuitous ARP of every address at once.
func (in *instance) announceNow() {
	err := in.ann.announce(in.allVIPs())
	sent := time.Now()
	if err != nil {
		in.log.Error("gratuitous ARP not sent", "err", err.Error())
	}
	in.mu.Lock()
	if t := in.st.LastTakeover; t != nil && t.FirstAnnounce.IsZero() {
		t.FirstAnnounce = sent
		t.AnnounceDelayS = sent.Sub(t.AddrsBound).Seconds()
		in.d.metrics.announceDelay.WithLabelValues(in.r.Name).Set(t.AnnounceDelayS)
	}
	in.mu.Unlock()
}

// announceRest sends the rest of the burst and the repeat burst in the background, as long
// as mastership gen lasts.
func (in *instance) announceRest(gen uint64) {
	cfg := in.g
	go func() {
		for i := 1; i < cfg.GARPCount; i++ {
			if !in.sleepAsMaster(cfg.GARPSpacing, gen) {
				return
			}
			_ = in.ann.announce(in.allVIPs())
		}
		if cfg.GARPRepeatDelay > 0 && in.sleepAsMaster(cfg.GARPRepeatDelay, gen) {
			in.burst(gen)
		}
	}()
}

// burst sends a full burst of announcements unless mastership ends meanwhile.
func (in *instance) burst(gen uint64) {
	cfg := in.g
	for i := 0; i < cfg.GARPCount; i++ {
		if i > 0 && !in.sleepAsMaster(cfg.GARPSpacing, gen) {
			return
		}
		if err := in.ann.announce(in.allVIPs()); err != nil {
			in.log.Error("gratuitous ARP not sent", "err", err.Error())
			return
		}
	}
}

// sleepAsMaster waits d and reports whether we are still in the same mastership.
func (in *instance) sleepAsMaster(d time.Duration, gen uint64) bool {
	if d > 0 {
		select {
		case <-time.After(d):
		case <-in.done:
			return false
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.masterGen == gen && in.st.State == vrrp.Master.String()
}

func (in *instance) transition(a vrrp.Action, now time.Time) {
	in.mu.Lock()
	switch {
	case a.To == vrrp.Leaving:
		in.st.LastHandover = &Handover{Started: now}
	case a.From == vrrp.Leaving && in.st.LastHandover != nil:
		h := in.st.LastHandover
		h.Released = time.Now()
		h.HeldS = h.Released.Sub(h.Started).Seconds()
		if ma := in.m.MasterAddr(); ma.IsValid() && ma != in.self {
			h.To = ma.String()
		}
	}
	in.masterGen++
	in.st.Transitions++
	in.st.LastTransition = now
	in.st.LastReason = a.Reason
	in.st.State = a.To.String()
	in.mu.Unlock()
	in.log.Info("transition", "from", a.From.String(), "to", a.To.String(), "priority", a.Priority, "reason", a.Reason)
	in.d.metrics.transitions.WithLabelValues(in.r.Name, a.To.String()).Inc()
	in.d.metrics.state.WithLabelValues(in.r.Name).Set(float64(a.To))
	in.notify(a.To, a.Priority)
}

// notify runs --notify like keepalived: CMD INSTANCE <name> <state> <priority>.
func (in *instance) notify(s vrrp.State, prio uint8) {
	if in.g.Notify == "" {
		return
	}
	f := strings.Fields(in.g.Notify)
	args := append(f[1:], "INSTANCE", in.r.Name, s.String(), strconv.Itoa(int(prio)))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, f[0], args...).CombinedOutput()
		if err != nil {
			in.log.Error("notify command failed", "cmd", in.g.Notify, "state", s.String(), "err", err.Error(), "output", strings.TrimSpace(string(out)))
		}
	}()
}

// advert is a valid advert and when it came.
type advert struct {
	ev vrrp.Event
	at time.Time
}

// handleAdvert feeds a to the state machine as of the time it came.
func (in *instance) handleAdvert(a advert) {
	select {
	case in.space <- struct{}{}:
	default:
	}
	in.noteMaster(a.at)
	in.exec(in.m.Handle(a.ev, a.at), time.Now())
}

// readPending handles the adverts that came before a timer event, also those the reader
// has not been woken for yet. On a loaded host (or after SIGSTOP) the Go runtime runs an
// expired timer before it wakes the goroutine blocked on the socket, tens of milliseconds
// later: a backup would take over from a live master whose adverts sat on its socket.
func (in *instance) readPending() {
	if err := in.conn.readQueued(in.room, in.receive); err != nil {
		in.log.Debug("cannot read queued adverts", "err", err.Error())
	}
	for {
		select {
		case a := <-in.adverts:
			in.handleAdvert(a)
		default:
			return
		}
	}
}

// readLoop receives adverts until the socket is closed.
func (in *instance) readLoop(ctx context.Context) {
	for {
		if err := in.conn.serve(in.room, in.receive); err != nil {
			if ctx.Err() == nil {
				in.log.Error("advert socket failed", "err", err.Error())
			}
			return
		}
		select { // adverts is full: wait until run takes one
		case <-in.space:
		case <-ctx.Done():
			return
		}
	}
}

// room reports whether adverts can take one more. Only the socket's one reader at a time
// (see sockReader) puts, so an advert put after room said yes never blocks.
func (in *instance) room() bool { return len(in.adverts) < cap(in.adverts) }

// receive drops (and counts) what the RFC says to drop, and hands the rest to run.
func (in *instance) receive(rc received) {
	reason, mismatch, p := in.check(rc, in.peers)
	if reason != "" {
		in.cw.dropped(rc, reason, p)
		if reason != vrrp.DropVRID {
			in.log.Debug("advert dropped", "from", rc.src.String(), "reason", reason)
		}
		in.d.metrics.dropped.WithLabelValues(in.r.Name, reason).Inc()
		in.mu.Lock()
		in.st.Dropped[reason]++
		in.mu.Unlock()
		return
	}
	in.d.metrics.received.WithLabelValues(in.r.Name).Inc()
	in.mu.Lock()
	in.st.AdvertsReceived++
	if mismatch {
		in.st.IntervalMismatch++
		if in.st.IntervalMismatch == 1 || in.st.IntervalMismatch%1000 == 0 {
			in.log.Warn("advert interval mismatch: following the master's", "from", rc.src.String(), "theirs", p.Interval().String(), "ours", in.r.Interval.String())
		}
	}
	in.mu.Unlock()
	if mismatch {
		in.d.metrics.mismatch.WithLabelValues(in.r.Name).Inc()
	}
	in.adverts <- advert{ev: vrrp.Event{Kind: vrrp.EvAdvert, From: rc.src.WithZone(""), Priority: p.Priority, Interval: p.Interval()}, at: rc.at}
}

func (in *instance) check(rc received, peers map[netip.Addr]bool) (string, bool, *vrrp.Packet) {
	if rc.bad {
		return vrrp.DropMalformed, false, nil
	}
	if rc.src.WithZone("") == in.self.WithZone("") {
		return vrrp.DropOwn, false, nil
	}
	if len(peers) > 0 && !peers[rc.src] {
		return vrrp.DropPeer, false, nil
	}
	p, err := vrrp.Decode(rc.payload, rc.src.WithZone(""), rc.dst.WithZone(""), in.r.Checksum)
	if err != nil {
		if p != nil && p.VRID != in.r.VRID {
			return vrrp.DropVRID, false, p // another group's advert, perhaps another checksum mode
		}
		return vrrp.DropReason(err), false, p
	}
	reason, mismatch := in.filter.Check(p, rc.ttl)
	return reason, mismatch, p
}

func (in *instance) status() InstanceStatus {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.st
	s.Dropped = make(map[string]uint64, len(in.st.Dropped))
	for k, v := range in.st.Dropped {
		s.Dropped[k] = v
	}
	if in.st.LastTakeover != nil {
		t := *in.st.LastTakeover
		s.LastTakeover = &t
	}
	if in.st.LastHandover != nil {
		h := *in.st.LastHandover
		s.LastHandover = &h
	}
	s.Conflicts = append([]vrrp.VIPConflict(nil), in.st.Conflicts...)
	return s
}
