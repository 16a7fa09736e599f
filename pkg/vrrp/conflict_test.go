package vrrp

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	vipA     = netip.MustParseAddr("10.77.1.100")
	vipB     = netip.MustParseAddr("fd77:1::100")
	macOwn   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x11}
	macVlan  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x1f} // a macvlan of this host
	macOld   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x12}
	macOther = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x13}
	sec      = time.Second
)

// cstep feeds one observation at t0+at, then (if update) runs Update and checks the
// changes it returned ("+vip" started, "-vip" ended) and the VIPs in conflict.
type cstep struct {
	at     time.Duration
	do     func(c *Conflicts, now time.Time)
	update bool
	want   []string
	active []netip.Addr
}

func observe(s State, master netip.Addr) func(*Conflicts, time.Time) {
	return func(c *Conflicts, now time.Time) { c.Observe(s, master, now) }
}

func claimed(vip netip.Addr, mac net.HardwareAddr) func(*Conflicts, time.Time) {
	return func(c *Conflicts, now time.Time) { c.Claim(vip, mac, ClaimARP, now) }
}

func dropped(from netip.Addr, reason string, prio uint8, addrs ...netip.Addr) func(*Conflicts, time.Time) {
	return func(c *Conflicts, now time.Time) { c.Dropped(from, reason, prio, sec, addrs, now) }
}

var noop = func(*Conflicts, time.Time) {}

func TestConflicts(t *testing.T) {
	cfg := ConflictConfig{VIPs: []netip.Addr{vipA, vipB}, Hold: 3 * sec, Grace: 2 * sec, Confirm: 500 * ms}
	tests := []struct {
		name  string
		steps []cstep
	}{
		{"own and macvlan addresses never conflict, also our gratuitous ARPs", []cstep{
			{0, observe(Master, netip.Addr{}), true, nil, nil},
			{5 * sec, claimed(vipA, macOwn), true, nil, nil},
			{6 * sec, claimed(vipA, macVlan), true, nil, nil},
			{7 * sec, func(c *Conflicts, now time.Time) { c.Claim(vipB, macOwn, ClaimNDP, now) }, true, nil, nil},
		}},
		{"master: another address answering is a conflict until Hold passes without it", []cstep{
			{0, observe(Master, netip.Addr{}), true, nil, nil},
			// One answer is not enough: a new master's gratuitous ARP may come just before
			// its advert.
			{5 * sec, claimed(vipA, macOther), true, nil, nil},
			{5*sec + 400*ms, claimed(vipA, macOther), true, nil, nil},
			{6 * sec, claimed(vipA, macOther), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
			{7 * sec, noop, true, nil, []netip.Addr{vipA}},
			// A probe without answer (lost) does not end the episode: Hold is longer.
			{8 * sec, claimed(vipA, macOther), true, nil, []netip.Addr{vipA}},
			{11 * sec, noop, true, nil, []netip.Addr{vipA}},
			{11*sec + 1, noop, true, []string{"-10.77.1.100"}, nil},
		}},
		{"master: the old master's lingering answers within the grace window are ignored", []cstep{
			{0, observe(Backup, addrHi), true, nil, nil},
			{sec, claimed(vipA, macOld), true, nil, nil},
			{10 * sec, observe(Master, netip.Addr{}), true, nil, nil},
			{10*sec + 100*ms, claimed(vipA, macOld), true, nil, nil},
			{11*sec + 900*ms, claimed(vipA, macOld), true, nil, nil},
			{12*sec + 500*ms, noop, true, nil, nil},
			{15 * sec, noop, true, nil, nil},
		}},
		{"master: an old master still answering after the grace window is a conflict", []cstep{
			{0, observe(Master, netip.Addr{}), true, nil, nil},
			{sec, claimed(vipA, macOld), true, nil, nil},
			{2 * sec, claimed(vipA, macOld), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
		}},
		{"backup: the master answering is no conflict, a second holder is", []cstep{
			{0, observe(Backup, addrHi), true, nil, nil},
			{3 * sec, claimed(vipA, macOld), true, nil, nil},
			{4 * sec, claimed(vipA, macOld), true, nil, nil},
			{5 * sec, claimed(vipA, macOther), true, nil, nil},
			{6 * sec, claimed(vipA, macOther), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
			{9 * sec, claimed(vipA, macOther), true, []string{"-10.77.1.100"}, nil},
		}},
		{"backup: a new master taking over while the old one lingers is no conflict", []cstep{
			{0, observe(Backup, addrLo), true, nil, nil},
			{3 * sec, claimed(vipA, macOld), true, nil, nil},
			{4 * sec, observe(Backup, addrHi), false, nil, nil},
			{4*sec + 100*ms, claimed(vipA, macOther), true, nil, nil},
			{4*sec + 500*ms, claimed(vipA, macOld), true, nil, nil},
			{6*sec + 100*ms, claimed(vipA, macOther), true, nil, nil},
			{8 * sec, claimed(vipA, macOther), true, nil, nil},
		}},
		{"master: adverts dropped for authentication count from the second, without grace", []cstep{
			{0, observe(Backup, netip.Addr{}), true, nil, nil},
			{100 * ms, dropped(addrHi, DropAuth, 101, vipA), true, nil, nil},
			{1100 * ms, dropped(addrHi, DropAuth, 101, vipA), true, nil, nil},
			{3 * sec, observe(Master, netip.Addr{}), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
			{3*sec + 100*ms, dropped(addrHi, DropAuth, 101, vipA), true, nil, []netip.Addr{vipA}},
			{6*sec + 100*ms, noop, true, nil, []netip.Addr{vipA}},
			{6*sec + 200*ms, noop, true, []string{"-10.77.1.100"}, nil},
		}},
		{"a grace window does not end an episode while the other holder answers", []cstep{
			{0, observe(Backup, netip.Addr{}), true, nil, nil},
			{100 * ms, dropped(addrHi, DropAuth, 101, vipA), false, nil, nil},
			{500 * ms, claimed(vipA, macOther), false, nil, nil},
			{1100 * ms, dropped(addrHi, DropAuth, 101, vipA), false, nil, nil},
			{1500 * ms, claimed(vipA, macOther), false, nil, nil},
			{3 * sec, observe(Master, netip.Addr{}), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
			{3500 * ms, claimed(vipA, macOther), false, nil, nil},
			{4200 * ms, noop, true, nil, []netip.Addr{vipA}}, // the adverts pause: their signs expired
			{4500 * ms, claimed(vipA, macOther), true, nil, []netip.Addr{vipA}},
			{7600 * ms, noop, true, []string{"-10.77.1.100"}, nil},
		}},
		{"dropped adverts that are no sign of another master", []cstep{
			{0, observe(Master, netip.Addr{}), true, nil, nil},
			{100 * ms, dropped(addrHi, DropAuth, 0, vipA), false, nil, nil},
			{200 * ms, dropped(addrHi, DropAuth, 0, vipA), true, nil, nil},
			{300 * ms, dropped(addrHi, DropVRID, 100, netip.MustParseAddr("10.77.1.200")), false, nil, nil},
			{400 * ms, dropped(addrHi, DropVRID, 100, netip.MustParseAddr("10.77.1.200")), true, nil, nil},
			{500 * ms, dropped(addrHi, DropTTL, 100, vipA), false, nil, nil},
			{600 * ms, dropped(addrHi, DropTTL, 100, vipA), true, nil, nil},
			{700 * ms, dropped(addrHi, DropAuth, 100, vipA), true, nil, nil},
			{5 * sec, dropped(addrHi, DropAuth, 100, vipA), true, nil, nil}, // the first expired
		}},
		{"another VRID advertising our VIP is a conflict", []cstep{
			{0, observe(Master, netip.Addr{}), true, nil, nil},
			{100 * ms, dropped(addrHi, DropVRID, 100, vipB), false, nil, nil},
			{200 * ms, dropped(addrHi, DropVRID, 100, vipB), true, []string{"+fd77:1::100"}, []netip.Addr{vipB}},
		}},
		{"backup: adverts dropped from a router other than our master", []cstep{
			{0, observe(Backup, addrHi), true, nil, nil},
			{100 * ms, dropped(addrLo, DropAuth, 100, vipA), false, nil, nil},
			{200 * ms, dropped(addrLo, DropAuth, 100, vipA), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
		}},
		{"backup without a master: dropped adverts alone are one holder", []cstep{
			{0, observe(Backup, netip.Addr{}), true, nil, nil},
			{100 * ms, dropped(addrLo, DropAuth, 100, vipA), false, nil, nil},
			{200 * ms, dropped(addrLo, DropAuth, 100, vipA), true, nil, nil},
		}},
		{"fault and leaving end an episode", []cstep{
			{0, observe(Master, netip.Addr{}), true, nil, nil},
			{2 * sec, claimed(vipA, macOther), true, nil, nil},
			{3 * sec, claimed(vipA, macOther), true, []string{"+10.77.1.100"}, []netip.Addr{vipA}},
			{3*sec + 100*ms, observe(Leaving, netip.Addr{}), true, []string{"-10.77.1.100"}, nil},
			{3*sec + 200*ms, observe(Fault, netip.Addr{}), true, nil, nil},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConflicts(cfg)
			c.SetOwn([]net.HardwareAddr{macOwn, macVlan})
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				s.do(c, now)
				if !s.update {
					continue
				}
				var got []string
				for _, ch := range c.Update(now) {
					sign := "-"
					if ch.Start {
						sign = "+"
					}
					got = append(got, sign+ch.VIP.String())
				}
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d (at %s): changes %v, want %v", i, s.at, got, s.want)
				}
				var active []netip.Addr
				for _, v := range c.Current(now) {
					active = append(active, v.VIP)
				}
				if !slices.Equal(active, s.active) {
					t.Fatalf("step %d (at %s): in conflict %v, want %v", i, s.at, active, s.active)
				}
			}
		})
	}
}

// TestConflictEvidence: an episode names the other holder's address and the dropped adverts'
// sender with their reason, and each episode is counted once.
func TestConflictEvidence(t *testing.T) {
	c := NewConflicts(ConflictConfig{VIPs: []netip.Addr{vipA}, Hold: 3 * sec, Grace: sec, Confirm: 500 * ms})
	c.SetOwn([]net.HardwareAddr{macOwn})
	c.Observe(Master, netip.Addr{}, t0)
	for i := range 3 {
		at := t0.Add(time.Duration(i+2) * sec)
		c.Claim(vipA, macOther, ClaimARP, at)
		c.Dropped(addrHi, DropAuth, 101, sec, []netip.Addr{vipA}, at)
		ch := c.Update(at)
		if i == 1 && (len(ch) != 1 || !ch[0].Start) {
			t.Fatalf("second signs: changes %+v, want one start", ch)
		}
		if i != 1 && len(ch) != 0 {
			t.Fatalf("signs go on: changes %+v, want none", ch)
		}
	}
	cur := c.Current(t0.Add(4 * sec))
	if len(cur) != 1 || !slices.Equal(cur[0].MACs, []string{macOther.String() + " (arp)"}) ||
		!slices.Equal(cur[0].Senders, []string{addrHi.String() + " (auth)"}) || !cur[0].Since.Equal(t0.Add(3*sec)) {
		t.Fatalf("conflict %+v", cur)
	}
	if !c.Foreign(t0.Add(4 * sec)) {
		t.Fatal("Foreign is false while another holder answers")
	}
	c.Update(t0.Add(10 * sec))
	c.Claim(vipA, macOther, ClaimARP, t0.Add(11*sec))
	c.Claim(vipA, macOther, ClaimARP, t0.Add(12*sec))
	c.Update(t0.Add(12 * sec))
	if n := c.Episodes(vipA); n != 2 {
		t.Fatalf("episodes %d, want 2", n)
	}
	if c.Foreign(t0.Add(20 * sec)) {
		t.Fatal("Foreign is true long after the last sign")
	}
	if n := c.Episodes(netip.MustParseAddr("10.0.0.1")); n != 0 || strings.Contains(ClaimNDP, "arp") {
		t.Fatalf("unknown VIP has %d episodes", n)
	}
}
