package vip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/hacp/hacp/pkg/bfd"
	"github.com/hacp/hacp/pkg/bgp"
	"github.com/hacp/hacp/pkg/lease"
)

// bgpRunner is the BGP mode: it announces the host routes of the VIPs to the peers while the
// health checks pass and every tracked interface is up, with the addresses bound on lo
// meanwhile, and withdraws them otherwise. Every healthy host announces (anycast): the
// router spreads connections over them with ECMP, and each host's lbproxy balances over
// every apiserver, so any of them can take any connection. With --bgp-announce leader only
// the healthy host that holds a Lease on the apiserver announces.
type bgpRunner struct {
	d      *Daemon
	r      ResolvedBGP
	spk    *bgp.Speaker
	binder *addrBinder
	wakec  chan struct{}
	done   chan struct{}

	elector     *lease.Elector // leader mode; nil for anycast
	bfd         *bfd.Endpoint  // --bfd; nil without
	electorDone chan struct{}
	runCtx      context.Context

	mu        sync.Mutex
	announced bool
	reason    string // why not announced
	since     time.Time
	lastErr   string
	// reconnected: by peer, the moments (reconnectDown, reconnectBFDUp) reconnect has
	// acted on since the BGP session was last established (--bfd).
	reconnected map[netip.Addr]int
}

// BGPStatus is the BGP mode's part of /status.
type BGPStatus struct {
	AS       uint32           `json:"as"`
	RouterID string           `json:"router_id"`
	Announce string           `json:"announce"` // anycast or leader
	VIPs     []VIPStatus      `json:"vips"`
	Peers    []bgp.PeerStatus `json:"peers"`
	Leader   *lease.Status    `json:"leader,omitempty"` // leader mode
	// BFD has a session per peer with --bfd.
	BFD []bfd.SessionStatus `json:"bfd,omitempty"`
}

// VIPStatus is one announced address.
type VIPStatus struct {
	Prefix    string    `json:"prefix"`
	Announced bool      `json:"announced"`
	Since     time.Time `json:"since"`
	// Reason says why the route is not announced: "health check failing", "interface X
	// down", "not the leader", "starting", "stopping".
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

func newBGPRunner(d *Daemon, cfg *Config) (*bgpRunner, error) {
	r, err := cfg.ResolveBGP()
	if err != nil {
		return nil, err
	}
	if _, err := net.InterfaceByName(r.Iface); err != nil {
		return nil, fmt.Errorf("vip: there is no interface %q on this host to bind the addresses on (check --bgp-iface)", r.Iface)
	}
	for _, t := range r.TrackIfaces {
		if _, err := net.InterfaceByName(t); err != nil {
			return nil, fmt.Errorf("vip: there is no interface %q on this host (check --track-iface)", t)
		}
	}
	if !r.Speaker.RouterID.IsValid() {
		id, err := defaultRouterID(r.Speaker.Peers)
		if err != nil {
			return nil, err
		}
		r.Speaker.RouterID = id
	}
	b := &bgpRunner{
		d: d, r: r,
		// No lifetime: the route, not the address, is what moves traffic here, and a
		// killed vipd's route goes with the peers' hold timer.
		binder: &addrBinder{iface: r.Iface, resetConns: false, log: d.log},
		wakec:  make(chan struct{}, 1),
		done:   make(chan struct{}),
		reason: "starting",
		since:  time.Now(),
	}
	if r.BFD != nil {
		b.r.Speaker.OnSessionChange = b.bgpSessionChanged
		b.reconnected = map[netip.Addr]int{}
		b.bfd = bfd.NewEndpoint(d.log, b.bfdChanged)
		d.metrics.reg.MustRegister(bfdCollector{b})
	}
	if le := r.Leader; le != nil {
		creds, err := lease.LoadKubeconfig(le.Kubeconfig, le.Server)
		if err != nil {
			return nil, fmt.Errorf("vip: --kubeconfig: %w", err)
		}
		id := le.Identity
		if id == "" {
			if id, err = os.Hostname(); err != nil || id == "" {
				return nil, errors.New("vip: cannot read the host name for the Lease's holder identity; set --lease-identity")
			}
		}
		b.elector, err = lease.New(lease.Config{
			Credentials: creds, Namespace: le.Namespace, Name: le.Name, Identity: id,
			Duration: le.Duration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			Eligible: func() bool { ok, _ := b.eligible(); return ok },
			OnChange: b.leaderChanged,
			Log:      d.log,
		})
		if err != nil {
			return nil, err
		}
		b.electorDone = make(chan struct{})
	}
	return b, nil
}

// leaderChanged applies a change of leadership at once, from the elector's goroutine: a
// host that lost the Lease withdraws before the elector goes on.
func (b *bgpRunner) leaderChanged(leader bool) {
	v := 0.0
	if leader {
		v = 1
	}
	b.d.metrics.leader.Set(v)
	ok, why := b.want()
	b.apply(b.runCtx, ok, why)
}

// defaultRouterID picks the source address of the route to the first IPv4 peer, else the
// first global IPv4 address of the host.
func defaultRouterID(peers []bgp.Peer) (netip.Addr, error) {
	for _, p := range peers {
		if p.Source.Is4() {
			return p.Source, nil
		}
		if !p.Addr.Is4() {
			continue
		}
		routes, err := netlink.RouteGet(p.Addr.AsSlice())
		if err == nil && len(routes) > 0 {
			if a, ok := netip.AddrFromSlice(routes[0].Src); ok && a.Unmap().Is4() {
				return a.Unmap(), nil
			}
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err == nil {
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap().IsGlobalUnicast() {
				return ip.Unmap(), nil
			}
		}
	}
	return netip.Addr{}, errors.New("vip: no IPv4 address to use as BGP router ID; set --bgp-router-id")
}

func (b *bgpRunner) wake() {
	select {
	case b.wakec <- struct{}{}:
	default:
	}
	if b.elector != nil {
		b.elector.Wake()
	}
}

// want says whether the routes should be announced now, and why not.
func (b *bgpRunner) want() (bool, string) {
	if ok, why := b.eligible(); !ok {
		return false, why
	}
	if b.elector != nil && !b.elector.Leader() {
		return false, "not the leader"
	}
	return true, ""
}

// eligible says whether this host may announce (and, in leader mode, lead): the health
// checks pass and every tracked interface is up.
func (b *bgpRunner) eligible() (bool, string) {
	if !b.d.healthy() {
		return false, "health check failing"
	}
	for _, t := range b.r.TrackIfaces {
		if !b.d.linkUp(t) {
			return false, "interface " + t + " down"
		}
	}
	return true, ""
}

// run starts the speaker and follows health until ctx ends, then withdraws the routes
// (waiting up to stopTimeout for the peers to have been sent the withdrawals), closes the
// sessions and unbinds the addresses.
func (b *bgpRunner) run(ctx context.Context) error {
	defer close(b.done)
	if err := b.startBFD(); err != nil {
		return err
	}
	spk, err := bgp.Start(ctx, b.r.Speaker, b.d.log)
	if err != nil {
		b.stopBFD()
		return err
	}
	b.mu.Lock()
	b.spk = spk
	b.runCtx = ctx
	b.mu.Unlock()
	b.d.log.Info("BGP speaker started", "as", b.r.Speaker.AS, "router_id", b.r.Speaker.RouterID.String(), "peers", len(b.r.Speaker.Peers))
	if b.elector != nil {
		go func() {
			defer close(b.electorDone)
			b.elector.Run(ctx)
		}()
	}
	retry := time.NewTicker(time.Second) // re-applies after a failed netlink or GoBGP call
	defer retry.Stop()
	for {
		ok, why := b.want()
		b.apply(ctx, ok, why)
		select {
		case <-ctx.Done():
			b.stop()
			return nil
		case <-b.wakec:
		case <-retry.C:
		}
	}
}

func (b *bgpRunner) apply(ctx context.Context, ok bool, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if ok {
		// Bound first, so that the first packet the route draws finds the address.
		if err = b.binder.add(b.r.VIPs); err == nil {
			err = b.spk.Announce(ctx, b.r.VIPs...)
		}
	} else {
		// Withdrawn first; the address stays until the peers have been told, so that
		// packets still in flight are answered.
		if err = b.spk.Withdraw(ctx, b.r.VIPs...); err == nil && b.announced {
			err = b.binder.remove(b.r.VIPs)
		}
	}
	if err != nil {
		if b.lastErr != err.Error() {
			b.d.log.Error("BGP mode: cannot apply state", "announce", ok, "err", err.Error())
		}
		b.lastErr = err.Error()
		return
	}
	b.lastErr = ""
	if ok != b.announced {
		b.announced, b.since = ok, time.Now()
		b.d.log.Info("BGP routes changed", "announced", ok, "reason", why, "vips", fmt.Sprint(b.r.VIPs))
		v := 0.0
		state := "withdrawn"
		if ok {
			v, state = 1, "announced"
		}
		b.d.metrics.announced.Set(v)
		b.d.metrics.transitions.WithLabelValues("bgp", state).Inc()
	}
	if !ok {
		b.reason = why
	} else {
		b.reason = ""
	}
}

// stopTimeout bounds SIGTERM's withdraw-then-close, beyond the configured grace.
const stopTimeout = 3 * time.Second

func (b *bgpRunner) stop() {
	if b.elector != nil {
		<-b.electorDone // no leadership change from here on
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout+b.r.StopGrace)
	defer cancel()
	start := time.Now()
	// Leader mode: once the withdrawals are sent, release the Lease so that another host
	// announces at once, while this one still answers during the grace.
	var release func()
	if b.elector != nil {
		release = func() {
			rctx, cancel := context.WithTimeout(ctx, stopTimeout)
			defer cancel()
			if err := b.elector.Release(rctx); err != nil {
				b.d.log.Warn("cannot release the lease; the others take over when it expires", "err", err.Error())
			}
			b.d.metrics.leader.Set(0)
		}
	}
	if err := b.spk.Stop(ctx, b.r.StopGrace, release); err != nil {
		b.d.log.Warn("BGP speaker stop", "err", err.Error())
	}
	b.stopBFD() // after the sessions closed: AdminDown tells the peers it is on purpose
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.announced {
		if err := b.binder.remove(b.r.VIPs); err != nil {
			b.d.log.Warn("cannot unbind the addresses", "err", err.Error())
		}
	}
	b.announced, b.reason, b.since = false, "stopping", time.Now()
	b.d.metrics.announced.Set(0)
	b.d.log.Info("BGP routes withdrawn and sessions closed", "took", time.Since(start).Round(time.Millisecond).String())
}

func (b *bgpRunner) status() *BGPStatus {
	b.mu.Lock()
	spk := b.spk
	st := &BGPStatus{AS: b.r.Speaker.AS, RouterID: b.r.Speaker.RouterID.String(), Announce: "anycast", VIPs: []VIPStatus{}, Peers: []bgp.PeerStatus{}}
	if b.elector != nil {
		ls := b.elector.Status()
		st.Announce, st.Leader = "leader", &ls
	}
	for _, p := range b.r.VIPs {
		st.VIPs = append(st.VIPs, VIPStatus{Prefix: p.String(), Announced: b.announced, Since: b.since, Reason: b.reason, Error: b.lastErr})
	}
	b.mu.Unlock()
	st.BFD = b.bfdStatus()
	if spk != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if peers, err := spk.Peers(ctx); err == nil {
			st.Peers = peers
		}
	}
	return st
}
