package vrrp

import (
	"net"
	"net/netip"
	"slices"
	"time"
)

// Signs of a second holder of the virtual addresses, as the host reports them to a
// Conflicts: Claim for a link-layer answer, Dropped for an advert the filter refused.
const (
	ClaimARP = "arp" // an ARP packet whose sender address is the VIP
	ClaimNDP = "ndp" // a neighbour advertisement whose target is the VIP
)

// ConflictConfig is how a Conflicts weighs the signs of another holder.
type ConflictConfig struct {
	// VIPs are the addresses watched.
	VIPs []netip.Addr
	// Hold is how long a sign counts: an episode ends once Hold has passed without one. It
	// must be longer than the probe interval, so that a conflict does not end between two
	// probes.
	Hold time.Duration
	// Grace is how long after a change of master (ours or the one we follow) claims are not
	// counted: the old holder keeps answering for the addresses while it lingers and drains
	// (MachineConfig.HandoverLinger and the host's drain), or until it hears the new master.
	Grace time.Duration
	// Confirm is how long a link-layer address must go on claiming a VIP before it counts:
	// a new master's gratuitous ARP may be read just before its advert, which makes us its
	// backup (or makes us follow it) at once.
	Confirm time.Duration
}

// Conflicts decides, from what the host observes, whether a router other than the VRRP
// master holds our virtual addresses. It is pure: the host sends ARP and NDP probes, reports
// what answers (Claim) and which adverts it drops (Dropped), tells it its state (Observe) and
// calls Update on a clock.
//
// A VIP is in conflict
//   - in Master, when a link-layer address that is not ours claims it (for Confirm, and
//     outside Grace unless an episode is on), or when a router keeps advertising it in
//     adverts we cannot accept (authentication, version, interval, checksum, or another
//     VRID): another master we do not hear;
//   - in Backup, when two link-layer addresses claim it (the same way), or when, while we
//     follow a master, another router keeps advertising it in adverts we cannot accept.
//
// In every other state (Initialize, Fault, Leaving) nothing is in conflict. It is not safe
// for concurrent use.
type Conflicts struct {
	cfg     ConflictConfig
	own     map[string]bool // our link-layer addresses
	state   State
	master  netip.Addr
	changed time.Time // last change of state or master: Grace counts from here
	vips    map[netip.Addr]*vipSigns
}

type vipSigns struct {
	claims   map[string]claim          // by link-layer address
	drops    map[netip.Addr]*droppedBy // by sender
	active   bool
	since    time.Time
	episodes uint64
}

type claim struct {
	first, last time.Time
	kind        string
}

type droppedBy struct {
	first, last time.Time
	n           int
	reason      string
	window      time.Duration // the sender's own advert interval x 3, at least Hold
}

// VIPConflict describes one address in conflict; it is also vipd's /status view.
type VIPConflict struct {
	VIP   netip.Addr `json:"vip"`
	Since time.Time  `json:"since"`
	// MACs are the other link-layer addresses that answered for it, with how (arp, ndp).
	MACs []string `json:"macs,omitempty"`
	// Senders are the routers whose adverts for it were dropped, with the reason.
	Senders []string `json:"senders,omitempty"`
}

// ConflictChange is the start (Start) or end of a conflict episode of one VIP.
type ConflictChange struct {
	VIPConflict
	Start bool
}

// NewConflicts returns a detector in Initialize.
func NewConflicts(cfg ConflictConfig) *Conflicts {
	c := &Conflicts{cfg: cfg, own: map[string]bool{}, vips: map[netip.Addr]*vipSigns{}}
	for _, v := range cfg.VIPs {
		c.vips[v] = &vipSigns{claims: map[string]claim{}, drops: map[netip.Addr]*droppedBy{}}
	}
	return c
}

// SetOwn replaces the set of this host's link-layer addresses: claims from them are ours
// (the interface, a macvlan on it, another interface answering for the VIP).
func (c *Conflicts) SetOwn(macs []net.HardwareAddr) {
	c.own = make(map[string]bool, len(macs))
	for _, m := range macs {
		c.own[m.String()] = true
	}
}

// Observe tells the detector the instance's state and the master it follows (Backup).
func (c *Conflicts) Observe(s State, master netip.Addr, now time.Time) {
	if s != Backup {
		master = netip.Addr{}
	}
	if s != c.state || master != c.master {
		c.state, c.master, c.changed = s, master, now
	}
}

// Claim records that mac answered for (or announced) vip at now.
func (c *Conflicts) Claim(vip netip.Addr, mac net.HardwareAddr, kind string, now time.Time) {
	v := c.vips[vip]
	if v == nil || len(mac) == 0 || c.own[mac.String()] {
		return
	}
	cl, ok := v.claims[mac.String()]
	if !ok || now.Sub(cl.last) > c.cfg.Hold {
		cl.first = now
	}
	cl.last, cl.kind = now, kind
	v.claims[mac.String()] = cl
}

// Dropped records an advert dropped for reason: from sender, with its priority, advert
// interval and addresses. Only adverts of a router claiming to be master (priority > 0)
// that list one of our VIPs count, and only for the reasons that mean a VRRP speaker we
// cannot hear (not malformed, TTL, our own, or a non-peer in unicast mode).
func (c *Conflicts) Dropped(from netip.Addr, reason string, prio uint8, interval time.Duration, addrs []netip.Addr, now time.Time) {
	switch reason {
	case DropAuth, DropVersion, DropInterval, DropChecksum, DropVRID:
	default:
		return
	}
	if prio == 0 || !from.IsValid() {
		return
	}
	window := max(c.cfg.Hold, 3*interval)
	for _, a := range addrs {
		v := c.vips[a]
		if v == nil {
			continue
		}
		d := v.drops[from]
		if d == nil || now.Sub(d.last) > d.window {
			d = &droppedBy{first: now}
			v.drops[from] = d
		}
		d.last, d.reason, d.window = now, reason, window
		d.n++
	}
}

// Update evaluates every VIP at now and returns the episodes that started or ended.
func (c *Conflicts) Update(now time.Time) []ConflictChange {
	var out []ConflictChange
	for _, vip := range c.cfg.VIPs {
		v := c.vips[vip]
		cur, in := c.evaluate(vip, v, now)
		switch {
		case in && !v.active:
			v.active, v.since = true, now
			v.episodes++
			cur.Since = now
			out = append(out, ConflictChange{VIPConflict: cur, Start: true})
		case !in && v.active:
			v.active = false
			out = append(out, ConflictChange{VIPConflict: VIPConflict{VIP: vip, Since: v.since}})
		}
	}
	return out
}

// evaluate forgets expired signs of v and reports whether it is in conflict now.
func (c *Conflicts) evaluate(vip netip.Addr, v *vipSigns, now time.Time) (VIPConflict, bool) {
	cur := VIPConflict{VIP: vip, Since: v.since}
	countFrom := c.changed.Add(c.cfg.Grace)
	for mac, cl := range v.claims {
		switch {
		case now.Sub(cl.last) > c.cfg.Hold || c.own[mac]:
			delete(v.claims, mac)
		case cl.last.Sub(cl.first) >= c.cfg.Confirm && (v.active || !cl.last.Before(countFrom)):
			// Grace keeps a lingering old master from starting an episode, not from
			// sustaining one (adverts we drop may pause: keepalived skips its own while
			// it hears another master's, valid or not).
			cur.MACs = append(cur.MACs, mac+" ("+cl.kind+")")
		}
	}
	others := false // a sender other than the master we follow
	for from, d := range v.drops {
		switch {
		case now.Sub(d.last) > d.window:
			delete(v.drops, from)
		case d.n >= 2 && from != c.master:
			cur.Senders = append(cur.Senders, from.String()+" ("+d.reason+")")
			others = true
		}
	}
	slices.Sort(cur.MACs)
	slices.Sort(cur.Senders)
	switch c.state {
	case Master:
		return cur, len(cur.MACs) > 0 || others
	case Backup:
		return cur, len(cur.MACs) >= 2 || (c.master.IsValid() && others)
	}
	return cur, false
}

// Foreign reports whether anything other than this host claimed or advertised (in adverts
// we drop) one of the VIPs within Hold, Grace or not: a host that yielded to another
// holder stays out while it is there.
func (c *Conflicts) Foreign(now time.Time) bool {
	for _, v := range c.vips {
		for mac, cl := range v.claims {
			if !c.own[mac] && now.Sub(cl.last) <= c.cfg.Hold {
				return true
			}
		}
		for _, d := range v.drops {
			if now.Sub(d.last) <= d.window {
				return true
			}
		}
	}
	return false
}

// Current returns the VIPs in conflict as of the last Update, in configuration order.
func (c *Conflicts) Current(now time.Time) []VIPConflict {
	var out []VIPConflict
	for _, vip := range c.cfg.VIPs {
		v := c.vips[vip]
		if !v.active {
			continue
		}
		cur, _ := c.evaluate(vip, v, now)
		out = append(out, cur)
	}
	return out
}

// Episodes returns how many conflict episodes vip has had.
func (c *Conflicts) Episodes(vip netip.Addr) uint64 {
	if v := c.vips[vip]; v != nil {
		return v.episodes
	}
	return 0
}
