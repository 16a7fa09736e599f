package vrrp

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

var (
	t0      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addrLo  = netip.MustParseAddr("10.77.1.10")
	addrMe  = netip.MustParseAddr("10.77.1.11")
	addrHi  = netip.MustParseAddr("10.77.1.12")
	ms      = time.Millisecond
	us      = time.Microsecond
	noTimer = time.Duration(-1)
)

// step feeds one event at t0+at and checks the actions (summarised as strings), the state
// and the next timer (noTimer: none).
type step struct {
	at    time.Duration
	ev    Event
	want  []string
	state State
	next  time.Duration
}

func summarize(acts []Action) []string {
	var out []string
	for _, a := range acts {
		switch a.Kind {
		case ActSendAdvert:
			out = append(out, fmt.Sprintf("advert:%d", a.Priority))
		case ActAddAddrs:
			out = append(out, "add")
		case ActRemoveAddrs:
			out = append(out, "remove")
		case ActReleaseAddrs:
			out = append(out, "release")
		case ActAnnounce:
			out = append(out, "announce")
		case ActTransition:
			out = append(out, a.From.String()+"->"+a.To.String())
		case ActHoldDown:
			out = append(out, "hold:"+a.Until.Sub(t0).String())
		}
	}
	return out
}

func handover(c MachineConfig, d time.Duration) MachineConfig {
	c.Handover = d
	return c
}

func advert(from netip.Addr, prio uint8, interval time.Duration) Event {
	return Event{Kind: EvAdvert, From: from, Priority: prio, Interval: interval}
}

func yieldUntil(d time.Duration) Event {
	return Event{Kind: EvYield, Until: t0.Add(d), Reason: "conflict"}
}

var (
	startup  = Event{Kind: EvStartup}
	shutdown = Event{Kind: EvShutdown}
	tick     = Event{Kind: EvTimer}
)

func v3(prio uint8) MachineConfig {
	return MachineConfig{Version: 3, Priority: prio, Interval: 100 * ms, Addr: addrMe, Preempt: true}
}

// down100 is the v3 master down interval at priority 100 and 100 ms adverts:
// 3 x 100 ms + (256-100) x 100 ms / 256 = 360.9375 ms.
const down100 = 360937500 * time.Nanosecond

// skew100 is the v3 skew time at priority 100 and 100 ms adverts.
const skew100 = 60937500 * time.Nanosecond

// toMaster: a backup whose master went silent advertises first, then binds and announces
// (at once with no settle time).
var toMaster = []string{"advert:100", "add", "announce", "BACKUP->MASTER"}

func TestMachine(t *testing.T) {
	tests := []struct {
		name  string
		cfg   MachineConfig
		steps []step
	}{
		{"startup goes to backup with master down timer", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
		}},
		{"priority 255 owner starts as master", v3(255), []step{
			{0, startup, []string{"add", "announce", "advert:255", "INIT->MASTER"}, Master, 100 * ms},
		}},
		{"timer before deadline does nothing", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100 - us, tick, nil, Backup, down100},
		}},
		{"master down timer expiry takes over, then adverts every interval", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + 100*ms, tick, []string{"advert:100"}, Master, down100 + 200*ms},
		}},
		{"higher advert in backup restarts master down timer", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{300 * ms, advert(addrLo, 150, 100*ms), nil, Backup, 300*ms + down100},
		}},
		{"equal advert in backup restarts the timer even from a lower address", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrLo, 100, 100*ms), nil, Backup, 100*ms + down100},
		}},
		{"priority 0 advert in backup: take over after skew time only", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrHi, 200, 100*ms), nil, Backup, 100*ms + down100},
			{150 * ms, advert(addrHi, 0, 100*ms), nil, Backup, 150*ms + skew100},
			{150*ms + skew100, tick, []string{"advert:100", "add", "announce", "BACKUP->MASTER"}, Master, 250*ms + skew100},
		}},
		{"preempt: lower advert ignored, backup takes over", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrHi, 50, 100*ms), nil, Backup, down100},
			{200 * ms, advert(addrHi, 50, 100*ms), nil, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
		}},
		{"nopreempt: lower master is followed", func() MachineConfig { c := v3(100); c.Preempt = false; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrHi, 50, 100*ms), nil, Backup, 100*ms + down100},
		}},
		{"preempt delay: lower master tolerated for the delay", func() MachineConfig { c := v3(100); c.PreemptDelay = 500 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrHi, 50, 100*ms), nil, Backup, 100*ms + down100},
			{599 * ms, advert(addrHi, 50, 100*ms), nil, Backup, 599*ms + down100},
			{600 * ms, advert(addrHi, 50, 100*ms), nil, Backup, 599*ms + down100},
			{599*ms + down100, tick, toMaster, Master, 699*ms + down100},
		}},
		{"master steps down on higher priority and adopts its interval", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + 10*ms, advert(addrLo, 101, time.Second), []string{"release", "MASTER->BACKUP"}, Backup, down100 + 10*ms + 3*time.Second + 609375000},
		}},
		{"equal priority: higher address wins, master steps down", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + ms, advert(addrHi, 100, 100*ms), []string{"release", "MASTER->BACKUP"}, Backup, down100 + ms + down100},
		}},
		{"equal priority: lower address loses, master re-asserts", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + ms, advert(addrLo, 100, 100*ms), []string{"advert:100", "announce"}, Master, down100 + 101*ms},
		}},
		{"master re-asserts on a lower-priority advert", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + 50*ms, advert(addrHi, 99, 100*ms), []string{"advert:100", "announce"}, Master, down100 + 150*ms},
		}},
		{"master answers a priority 0 advert at once", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + 50*ms, advert(addrHi, 0, 100*ms), []string{"advert:100"}, Master, down100 + 150*ms},
		}},
		{"shutdown of master: priority 0 advert, addresses removed", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + 50*ms, shutdown, []string{"advert:0", "remove", "MASTER->INIT"}, Initialize, noTimer},
		}},
		{"shutdown of backup is silent", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{ms, shutdown, []string{"BACKUP->INIT"}, Initialize, noTimer},
		}},
		{"fault in master: priority 0, remove, FAULT; clear: back to backup", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + ms, Event{Kind: EvFault, Fault: true, Reason: "check"}, []string{"advert:0", "remove", "MASTER->FAULT"}, Fault, noTimer},
			{down100 + 2*ms, advert(addrHi, 50, 100*ms), nil, Fault, noTimer},
			{time.Second, Event{Kind: EvFault, Fault: false}, []string{"FAULT->BACKUP"}, Backup, time.Second + down100},
		}},
		{"fault before startup starts in FAULT", v3(100), []step{
			{0, Event{Kind: EvFault, Fault: true, Reason: "link down"}, nil, Initialize, noTimer},
			{ms, startup, []string{"INIT->FAULT"}, Fault, noTimer},
		}},
		{"priority change in master is advertised at once", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{down100 + 10*ms, Event{Kind: EvPriority, Priority: 80}, []string{"advert:80"}, Master, down100 + 110*ms},
			{down100 + 20*ms, advert(addrHi, 90, 100*ms), []string{"release", "MASTER->BACKUP"}, Backup, down100 + 20*ms + 300*ms + 68750000},
		}},
		{"owner never lowers its priority", v3(255), []step{
			{0, startup, []string{"add", "announce", "advert:255", "INIT->MASTER"}, Master, 100 * ms},
			{ms, Event{Kind: EvPriority, Priority: 200}, nil, Master, 100 * ms},
		}},
		{"v2 skew is in seconds", MachineConfig{Version: 2, Priority: 100, Interval: time.Second, Addr: addrMe, Preempt: true}, []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, 3*time.Second + 609375000},
		}},
		{"flap damping holds in backup", func() MachineConfig {
			c := v3(100)
			c.FlapMax, c.FlapWindow, c.FlapHold = 2, 10*time.Second, 5*time.Second
			return c
		}(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, advert(addrHi, 200, 100*ms), []string{"release", "MASTER->BACKUP"}, Backup, time.Second + down100},
			{2 * time.Second, tick, toMaster, Master, 2*time.Second + 100*ms},
			{3 * time.Second, advert(addrHi, 200, 100*ms), []string{"release", "MASTER->BACKUP"}, Backup, 3*time.Second + down100},
			{4 * time.Second, tick, []string{"hold:9s"}, Backup, 9 * time.Second},
			{5 * time.Second, advert(addrHi, 200, 100*ms), nil, Backup, 9 * time.Second},
			{9 * time.Second, tick, toMaster, Master, 9*time.Second + 100*ms},
		}},
		{"yield: a master steps down and holds in backup, extended while sent again", v3(100), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, yieldUntil(4 * time.Second), []string{"advert:0", "remove", "MASTER->BACKUP"}, Backup, 4 * time.Second},
			{2 * time.Second, advert(addrHi, 0, 100*ms), nil, Backup, 2*time.Second + skew100},
			{2*time.Second + skew100, tick, nil, Backup, 4 * time.Second},
			{3 * time.Second, yieldUntil(6 * time.Second), nil, Backup, 6 * time.Second},
			{5 * time.Second, yieldUntil(5 * time.Second), nil, Backup, 6 * time.Second},
			{6 * time.Second, tick, toMaster, Master, 6*time.Second + 100*ms},
		}},
		{"yield while settling removes nothing; ignored in fault", func() MachineConfig { c := v3(100); c.TakeoverSettle = 10 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, []string{"advert:100", "BACKUP->MASTER"}, Master, down100 + 10*ms},
			{down100 + ms, yieldUntil(time.Second), []string{"advert:0", "MASTER->BACKUP"}, Backup, time.Second},
			{down100 + 2*ms, Event{Kind: EvFault, Fault: true, Reason: "link"}, []string{"BACKUP->FAULT"}, Fault, noTimer},
			{down100 + 3*ms, yieldUntil(2 * time.Second), nil, Fault, noTimer},
		}},
		{"handover: leaving master keeps its addresses until a new master advertises", handover(v3(100), 400*ms), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, shutdown, []string{"advert:0", "MASTER->LEAVING"}, Leaving, time.Second + 100*ms},
			{time.Second + 60*ms, advert(addrLo, 0, 100*ms), nil, Leaving, time.Second + 100*ms},
			{time.Second + 61*ms, advert(addrLo, 99, 100*ms), []string{"release", "LEAVING->INIT"}, Initialize, noTimer},
			{time.Second + 200*ms, advert(addrLo, 99, 100*ms), nil, Initialize, noTimer},
		}},
		{"handover: with a linger the addresses go a moment after the new master's advert", func() MachineConfig { c := handover(v3(100), 400*ms); c.HandoverLinger = 25 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, shutdown, []string{"advert:0", "MASTER->LEAVING"}, Leaving, time.Second + 100*ms},
			{time.Second + 61*ms, advert(addrLo, 99, 100*ms), nil, Leaving, time.Second + 86*ms},
			{time.Second + 70*ms, advert(addrLo, 99, 100*ms), nil, Leaving, time.Second + 86*ms},
			{time.Second + 86*ms, tick, []string{"release", "LEAVING->INIT"}, Initialize, noTimer},
		}},
		{"settle: after a priority 0 advert the new master advertises, then binds and announces", func() MachineConfig { c := v3(100); c.TakeoverSettle = 10 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrHi, 0, 100*ms), nil, Backup, 100*ms + skew100},
			{100*ms + skew100, tick, []string{"advert:100", "BACKUP->MASTER"}, Master, 110*ms + skew100},
			{110*ms + skew100, tick, []string{"add", "announce"}, Master, 200*ms + skew100},
			{200*ms + skew100, tick, []string{"advert:100"}, Master, 300*ms + skew100},
		}},
		{"settle: a better router's advert meanwhile: stand down having announced nothing", func() MachineConfig { c := v3(99); c.TakeoverSettle = 10 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, 3*100*ms + 61328125},
			{100 * ms, advert(addrHi, 0, 100*ms), nil, Backup, 100*ms + 61328125},
			{100*ms + 61328125, tick, []string{"advert:99", "BACKUP->MASTER"}, Master, 110*ms + 61328125},
			{105*ms + 61328125, advert(addrLo, 100, 100*ms), []string{"MASTER->BACKUP"}, Backup, 105*ms + 61328125 + 3*100*ms + 61328125},
		}},
		{"settle: a master that was only late answers our advert: stand down having announced nothing", func() MachineConfig { c := v3(99); c.TakeoverSettle = 10 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, 3*100*ms + 61328125},
			{3*100*ms + 61328125, tick, []string{"advert:99", "BACKUP->MASTER"}, Master, 3*100*ms + 61328125 + 10*ms},
			{3*100*ms + 61328125 + 2*ms, advert(addrLo, 100, 100*ms), []string{"MASTER->BACKUP"}, Backup, 3*100*ms + 61328125 + 2*ms + 3*100*ms + 61328125},
		}},
		{"settle: stopped while settling: priority 0, nothing to remove", func() MachineConfig { c := handover(v3(100), 400*ms); c.TakeoverSettle = 10 * ms; return c }(), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{100 * ms, advert(addrHi, 0, 100*ms), nil, Backup, 100*ms + skew100},
			{100*ms + skew100, tick, []string{"advert:100", "BACKUP->MASTER"}, Master, 110*ms + skew100},
			{105*ms + skew100, shutdown, []string{"advert:0", "MASTER->INIT"}, Initialize, noTimer},
		}},
		{"handover: priority 0 repeated every interval, lone master lets go at the timeout", handover(v3(100), 250*ms), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, shutdown, []string{"advert:0", "MASTER->LEAVING"}, Leaving, time.Second + 100*ms},
			{time.Second + 100*ms, tick, []string{"advert:0"}, Leaving, time.Second + 200*ms},
			{time.Second + 200*ms, tick, []string{"advert:0"}, Leaving, time.Second + 250*ms},
			{time.Second + 250*ms, tick, []string{"remove", "LEAVING->INIT"}, Initialize, noTimer},
		}},
		{"handover: a second shutdown lets go at once", handover(v3(100), 400*ms), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, shutdown, []string{"advert:0", "MASTER->LEAVING"}, Leaving, time.Second + 100*ms},
			{time.Second + 10*ms, shutdown, []string{"remove", "LEAVING->INIT"}, Initialize, noTimer},
		}},
		{"handover: a fault while leaving lets go at once", handover(v3(100), 400*ms), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{down100, tick, toMaster, Master, down100 + 100*ms},
			{time.Second, shutdown, []string{"advert:0", "MASTER->LEAVING"}, Leaving, time.Second + 100*ms},
			{time.Second + 10*ms, Event{Kind: EvFault, Fault: true, Reason: "link eth0 down"}, []string{"remove", "LEAVING->INIT"}, Initialize, noTimer},
		}},
		{"handover: a backup stops silently", handover(v3(100), 400*ms), []step{
			{0, startup, []string{"INIT->BACKUP"}, Backup, down100},
			{ms, shutdown, []string{"BACKUP->INIT"}, Initialize, noTimer},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMachine(tt.cfg)
			for i, s := range tt.steps {
				got := summarize(m.Handle(s.ev, t0.Add(s.at)))
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d (t=%s): actions %q, want %q", i, s.at, got, s.want)
				}
				if m.State() != s.state {
					t.Fatalf("step %d (t=%s): state %s, want %s", i, s.at, m.State(), s.state)
				}
				next := noTimer
				if n := m.Next(); !n.IsZero() {
					next = n.Sub(t0)
				}
				if next != s.next {
					t.Fatalf("step %d (t=%s): next timer at %s, want %s", i, s.at, next, s.next)
				}
			}
		})
	}
}

// TestThreeRouters runs three machines against each other on a simulated wire (each advert
// reaches the others at once) and checks the election of RFC 5798: highest priority wins,
// a returning higher router preempts, a priority 0 advert hands over after skew time.
func TestThreeRouters(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("10.77.1.11"), netip.MustParseAddr("10.77.1.12"), netip.MustParseAddr("10.77.1.13")}
	prios := []uint8{101, 100, 99}
	ms := make([]*Machine, 3)
	up := []bool{true, true, true}
	for i := range ms {
		c := v3(prios[i])
		c.Addr = addrs[i]
		ms[i] = NewMachine(c)
	}
	now := t0
	var deliver func(from int, acts []Action)
	deliver = func(from int, acts []Action) {
		for _, a := range acts {
			if a.Kind != ActSendAdvert {
				continue
			}
			for j, m := range ms {
				if j != from && up[j] {
					deliver(j, m.Handle(advert(addrs[from], a.Priority, 100*time.Millisecond), now))
				}
			}
		}
	}
	// run advances time to until, firing timers in order.
	run := func(until time.Time) {
		for {
			next, who := time.Time{}, -1
			for i, m := range ms {
				if n := m.Next(); up[i] && !n.IsZero() && (who < 0 || n.Before(next)) {
					next, who = n, i
				}
			}
			if who < 0 || next.After(until) {
				now = until
				return
			}
			now = next
			deliver(who, ms[who].Handle(tick, now))
		}
	}
	masters := func() []int {
		var out []int
		for i, m := range ms {
			if up[i] && m.State() == Master {
				out = append(out, i)
			}
		}
		return out
	}
	for i := range ms {
		deliver(i, ms[i].Handle(startup, now))
	}
	run(t0.Add(2 * time.Second))
	if got := masters(); !slices.Equal(got, []int{0}) {
		t.Fatalf("after election: masters %v, want [0]", got)
	}
	// Crash router 0: router 1 takes over after its master down interval.
	up[0] = false
	crash := now
	run(now.Add(2 * time.Second))
	if got := masters(); !slices.Equal(got, []int{1}) {
		t.Fatalf("after crash: masters %v, want [1]", got)
	}
	if took := ms[1].Since().Sub(crash); took > MasterDownInterval(3, 100, 100*time.Millisecond) {
		t.Fatalf("takeover after %s, more than the master down interval", took)
	}
	// Router 0 returns and preempts.
	up[0] = true
	ms[0] = NewMachine(func() MachineConfig { c := v3(101); c.Addr = addrs[0]; return c }())
	deliver(0, ms[0].Handle(startup, now))
	run(now.Add(2 * time.Second))
	if got := masters(); !slices.Equal(got, []int{0}) {
		t.Fatalf("after return: masters %v, want [0]", got)
	}
	// Graceful stop of router 0: router 1 takes over after its skew time.
	stop := now
	deliver(0, ms[0].Handle(shutdown, now))
	up[0] = false
	run(now.Add(time.Second))
	if got := masters(); !slices.Equal(got, []int{1}) {
		t.Fatalf("after shutdown: masters %v, want [1]", got)
	}
	if took := ms[1].Since().Sub(stop); took != SkewTime(3, 100, 100*time.Millisecond) {
		t.Fatalf("graceful takeover after %s, want the skew time %s", took, SkewTime(3, 100, 100*time.Millisecond))
	}
}

func TestFilterCheck(t *testing.T) {
	f3 := Filter{Version: 3, VRID: 51, Interval: 100 * time.Millisecond}
	f2 := Filter{Version: 2, VRID: 52, AuthPass: "secret1", Interval: time.Second}
	p3 := func(mod func(*Packet)) *Packet {
		p := &Packet{Version: 3, Type: 1, VRID: 51, Priority: 100, MaxAdvertInt: 10}
		if mod != nil {
			mod(p)
		}
		return p
	}
	p2 := func(mod func(*Packet)) *Packet {
		p := &Packet{Version: 2, Type: 1, VRID: 52, Priority: 100, MaxAdvertInt: 1}
		p.SetPassword("secret1")
		if mod != nil {
			mod(p)
		}
		return p
	}
	tests := []struct {
		name     string
		f        Filter
		p        *Packet
		ttl      int
		reason   string
		mismatch bool
	}{
		{"v3 ok", f3, p3(nil), 255, "", false},
		{"ttl 254", f3, p3(nil), 254, DropTTL, false},
		{"wrong version", f3, p2(func(p *Packet) { p.VRID = 51 }), 255, DropVersion, false},
		{"other vrid", f3, p3(func(p *Packet) { p.VRID = 9 }), 255, DropVRID, false},
		{"v3 interval mismatch accepted", f3, p3(func(p *Packet) { p.MaxAdvertInt = 100 }), 255, "", true},
		{"v2 ok", f2, p2(nil), 255, "", false},
		{"v2 wrong password", f2, p2(func(p *Packet) { p.SetPassword("secret2") }), 255, DropAuth, false},
		{"v2 no auth", f2, p2(func(p *Packet) { p.SetPassword("") }), 255, DropAuth, false},
		{"v2 interval mismatch dropped", f2, p2(func(p *Packet) { p.MaxAdvertInt = 3 }), 255, DropInterval, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, mm := tt.f.Check(tt.p, tt.ttl)
			if r != tt.reason || mm != tt.mismatch {
				t.Fatalf("Check = %q, %v; want %q, %v", r, mm, tt.reason, tt.mismatch)
			}
		})
	}
}

// TestMakeBeforeBreak stops the master of three routers with a handover timeout on a
// simulated wire and checks that from the shutdown on some router holds the addresses at
// every instant, and that the leaving one lets go in the instant the new master has bound
// and announced them (the ordering a host relies on), long before its timeout.
func TestMakeBeforeBreak(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("10.77.1.11"), netip.MustParseAddr("10.77.1.12"), netip.MustParseAddr("10.77.1.13")}
	prios := []uint8{101, 100, 99}
	ms := make([]*Machine, 3)
	holds := make([]bool, 3)
	var events []string // "<router>:<action>" in the order they happened
	checking := false   // from the shutdown on, someone must hold the addresses
	for i := range ms {
		c := handover(v3(prios[i]), time.Second)
		c.HandoverLinger = 25 * time.Millisecond
		c.TakeoverSettle = 10 * time.Millisecond
		c.Addr = addrs[i]
		ms[i] = NewMachine(c)
	}
	now := t0
	var deliver func(from int, acts []Action)
	deliver = func(from int, acts []Action) {
		for _, a := range acts {
			switch a.Kind {
			case ActAddAddrs:
				holds[from] = true
				events = append(events, fmt.Sprintf("%d:add", from))
			case ActAnnounce:
				events = append(events, fmt.Sprintf("%d:announce", from))
			case ActRemoveAddrs, ActReleaseAddrs:
				holds[from] = false
				events = append(events, fmt.Sprintf("%d:%s", from, summarize([]Action{a})[0]))
			case ActSendAdvert:
				if checking && a.Priority > 0 && ms[0].State() == Leaving {
					events = append(events, fmt.Sprintf("%d:advert:%d", from, a.Priority))
				}
				for j, m := range ms {
					if j != from {
						deliver(j, m.Handle(advert(addrs[from], a.Priority, 100*time.Millisecond), now))
					}
				}
			}
			if checking && !slices.Contains(holds, true) {
				t.Fatalf("at %s nobody holds the addresses (states %s %s %s)", now.Sub(t0), ms[0].State(), ms[1].State(), ms[2].State())
			}
		}
	}
	run := func(until time.Time) {
		for {
			next, who := time.Time{}, -1
			for i, m := range ms {
				if n := m.Next(); !n.IsZero() && (who < 0 || n.Before(next)) {
					next, who = n, i
				}
			}
			if who < 0 || next.After(until) {
				now = until
				return
			}
			now = next
			deliver(who, ms[who].Handle(tick, now))
		}
	}
	for i := range ms {
		deliver(i, ms[i].Handle(startup, now))
	}
	run(t0.Add(2 * time.Second))
	if ms[0].State() != Master {
		t.Fatalf("router 0 is %s, want MASTER", ms[0].State())
	}
	events, checking = nil, true
	stop := now
	deliver(0, ms[0].Handle(shutdown, now))
	if ms[0].State() != Leaving || !holds[0] {
		t.Fatalf("after shutdown router 0 is %s holding=%v, want LEAVING and holding", ms[0].State(), holds[0])
	}
	run(now.Add(2 * time.Second))
	// Router 1 advertises first (router 2's timer would run out 0.4 ms later, and stands
	// down), binds and announces after the settle time; router 0 lets go after the linger.
	want := []string{"1:advert:100", "1:add", "1:announce", "0:release"}
	if !slices.Equal(events, want) {
		t.Fatalf("handover events %q, want %q", events, want)
	}
	if ms[0].State() != Initialize || ms[1].State() != Master || ms[2].State() != Backup {
		t.Fatalf("states %s %s %s, want INIT MASTER BACKUP", ms[0].State(), ms[1].State(), ms[2].State())
	}
	if took, want := ms[0].Since().Sub(stop), SkewTime(3, 100, 100*time.Millisecond)+25*time.Millisecond; took != want {
		t.Fatalf("router 0 let go %s after shutdown, want the new master's skew time plus the linger, %s", took, want)
	}
}

// TestPreemptFromStart: a higher-priority router that starts while a lower one is master
// never accepts one of its adverts, and still knows, when its master down timer preempts,
// whom it took over from, so that the connections the old master carries are passed back
// to it (HandedOverBy). A takeover from a silent master knows no one.
func TestPreemptFromStart(t *testing.T) {
	m := NewMachine(v3(101))
	m.Handle(startup, t0)
	now := t0
	for m.State() == Backup {
		now = now.Add(100 * ms)
		m.Handle(advert(addrLo, 100, 100*ms), now)
		if next := m.Next(); !next.IsZero() && !next.After(now.Add(100*ms)) {
			m.Handle(tick, next)
		}
	}
	if m.State() != Master {
		t.Fatalf("state %s, want MASTER", m.State())
	}
	if got := m.HandedOverBy(); got != addrLo {
		t.Fatalf("HandedOverBy() = %v after preempting %v from the start, want %v", got, addrLo, addrLo)
	}

	silent := NewMachine(v3(101))
	silent.Handle(startup, t0)
	silent.Handle(tick, silent.Next())
	if silent.State() != Master || silent.HandedOverBy().IsValid() {
		t.Fatalf("after no advert at all: state %s, HandedOverBy() = %v, want MASTER and none", silent.State(), silent.HandedOverBy())
	}
}
