package vrrp

import (
	"fmt"
	"net/netip"
	"time"
)

// State is the state of one virtual router instance.
type State uint8

const (
	// Initialize: not started, or stopped.
	Initialize State = iota
	// Backup: watching the master's adverts, ready to take over.
	Backup
	// Master: holding the virtual addresses and advertising.
	Master
	// Fault: a tracked check or interface failed; the instance neither advertises nor takes
	// over until the fault clears (keepalived's FAULT state).
	Fault
	// Leaving: a master that was shut down has announced priority 0 and keeps its addresses
	// until another router advertises (or MachineConfig.Handover passes), so that there is no
	// moment without a holder: make-before-break.
	Leaving
)

func (s State) String() string {
	switch s {
	case Initialize:
		return "INIT"
	case Backup:
		return "BACKUP"
	case Master:
		return "MASTER"
	case Fault:
		return "FAULT"
	case Leaving:
		return "LEAVING"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// MachineConfig is the protocol configuration of one instance.
type MachineConfig struct {
	// Version is the VRRP version, 2 or 3; it decides the unit of the skew time.
	Version uint8
	// Priority is the configured priority, 1-255; 255 owns the addresses.
	Priority uint8
	// Interval is our advert interval.
	Interval time.Duration
	// Addr is our primary address; it breaks ties between equal priorities.
	Addr netip.Addr
	// Preempt lets a higher-priority backup take over from a lower-priority master.
	Preempt bool
	// PreemptDelay delays that takeover: a lower-priority master is tolerated for this long
	// after we first see it (keepalived's preempt_delay).
	PreemptDelay time.Duration
	// FlapMax and FlapWindow damp flapping: when the instance has become master more than
	// FlapMax times within FlapWindow, it holds in Backup for FlapHold. Zero FlapMax disables.
	FlapMax    int
	FlapWindow time.Duration
	FlapHold   time.Duration
	// Handover is how long a master that is shut down keeps its addresses, announcing
	// priority 0 every advert interval, while it waits for another router's advert; it lets
	// go when that advert arrives, or when Handover has passed without one (a lone master).
	// Zero lets go at once, as RFC 5798 describes.
	Handover time.Duration
	// HandoverLinger is how long a Leaving master keeps its addresses after the new master's
	// first advert: a master taking over from a priority 0 advert advertises first (so that
	// the other backups, whose skew times differ by a fraction of a millisecond, stand down)
	// and binds and announces the addresses just after.
	HandoverLinger time.Duration
	// TakeoverSettle is how long a backup that takes over waits between its first advert
	// and binding and announcing the addresses: a backup whose timer ran out just after ours
	// hears our advert within it and stands down having announced nothing (their skew times
	// differ by 0.4 ms per priority point at 100 ms adverts, less than the scheduling delays
	// of a loaded host), and so does a backup whose master was only late (a starved host),
	// when the master answers its advert. Zero binds at once.
	TakeoverSettle time.Duration
}

// EventKind says what happened.
type EventKind uint8

const (
	// EvStartup starts the instance (Initialize -> Backup, or Master for priority 255).
	EvStartup EventKind = iota
	// EvShutdown stops it: a master sends a priority 0 advert and drops the addresses, at
	// once or, with MachineConfig.Handover, once another router has taken over (Leaving). A
	// second EvShutdown while Leaving drops them at once.
	EvShutdown
	// EvAdvert is a valid advert from another router (see Event.From etc.).
	EvAdvert
	// EvTimer is sent when the time returned by Next has come.
	EvTimer
	// EvPriority changes the effective priority (health weight): Event.Priority.
	EvPriority
	// EvFault enters (Event.Fault true) or leaves the Fault state.
	EvFault
	// EvYield gives way to another holder of the addresses that does not take part in our
	// election (see Conflicts): a master steps down to Backup (a priority 0 advert, the
	// addresses removed), and a backup does not take over before Event.Until. Sent again, it
	// extends the hold.
	EvYield
)

// Event is an input to the state machine.
type Event struct {
	Kind EventKind
	// From, Priority and Interval describe an EvAdvert; Priority is also the new effective
	// priority of an EvPriority.
	From     netip.Addr
	Priority uint8
	Interval time.Duration
	// Fault is the new fault state of an EvFault; Reason says why (also of an EvYield).
	Fault  bool
	Reason string
	// Until ends the hold of an EvYield.
	Until time.Time
}

// ActionKind says what the host must do.
type ActionKind uint8

const (
	// ActSendAdvert: send an advert with Action.Priority.
	ActSendAdvert ActionKind = iota
	// ActAddAddrs: bind the virtual addresses (or refresh their lifetime).
	ActAddAddrs
	// ActRemoveAddrs: unbind the virtual addresses; nobody else has them yet.
	ActRemoveAddrs
	// ActReleaseAddrs: give up the virtual addresses another router has just taken over and
	// announced: the host may keep them deprecated for a drain, so that the connections it
	// carries can finish (the new master passes their packets back, see HandedOverBy).
	ActReleaseAddrs
	// ActAnnounce: send gratuitous ARPs / unsolicited neighbour advertisements.
	ActAnnounce
	// ActTransition: the state changed From -> To because of Reason (log, notify, metrics).
	ActTransition
	// ActHoldDown: flap damping keeps the instance in Backup until Action.Until.
	ActHoldDown
)

// Action is an output of the state machine, executed in order by the host.
type Action struct {
	Kind     ActionKind
	Priority uint8
	From, To State
	Reason   string
	Until    time.Time
}

// Machine is the RFC 5798 section 6.4 state machine of one instance. It is not safe for
// concurrent use; the host serialises events.
type Machine struct {
	cfg   MachineConfig
	state State
	prio  uint8 // effective priority
	fault bool

	masterAdverInterval time.Duration
	masterDown          time.Time // Master_Down_Timer deadline, zero when off
	adverTimer          time.Time // Adver_Timer deadline, zero when off
	masterAddr          netip.Addr
	masterPrio          uint8
	lowerSince          time.Time  // first advert of a lower-priority master (preempt delay)
	holdUntil           time.Time  // flap damping or yield hold-down
	leaveBy             time.Time  // Leaving: let go by then even without another advert
	successor           netip.Addr // Leaving: the new master whose advert arrived
	bindAt              time.Time  // Master: bind and announce then (TakeoverSettle)
	bound               bool       // Master: the addresses are bound
	preempting          bool       // Backup: a live lower-priority master is being preempted
	handedBy            netip.Addr // Master: the live master we took over from (left or preempted)
	masterTimes         []time.Time
	changed             time.Time
}

// NewMachine returns a machine in Initialize.
func NewMachine(cfg MachineConfig) *Machine {
	return &Machine{cfg: cfg, prio: cfg.Priority, masterAdverInterval: cfg.Interval}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Priority returns the effective priority (what our adverts carry).
func (m *Machine) Priority() uint8 { return m.prio }

// MasterAddr returns the address of the current master as far as we know: ours when
// Master, the last advert's sender when Backup.
func (m *Machine) MasterAddr() netip.Addr {
	if m.state == Master {
		return m.cfg.Addr
	}
	return m.masterAddr
}

// Bound reports whether a Master has bound its addresses (not while it settles).
func (m *Machine) Bound() bool { return m.state == Master && m.bound }

// HandedOverBy returns, once Master, the router we took over from while it was alive: one
// that left with a priority 0 advert, or a lower-priority one we preempted. It still holds
// the connections it carried for a moment (see ActReleaseAddrs). Zero after a takeover from
// a silent master.
func (m *Machine) HandedOverBy() netip.Addr { return m.handedBy }

// MasterPriority is the priority of the last advert of the master we follow.
func (m *Machine) MasterPriority() uint8 { return m.masterPrio }

// Since returns when the state last changed.
func (m *Machine) Since() time.Time { return m.changed }

// HoldUntil returns the end of a flap-damping hold-down, or zero.
func (m *Machine) HoldUntil() time.Time { return m.holdUntil }

// SkewTime is the RFC's Skew_Time for priority p and the master's advert interval:
// (256-p)*interval/256 in VRRPv3, (256-p)/256 seconds in VRRPv2.
func SkewTime(version uint8, p uint8, masterInterval time.Duration) time.Duration {
	if version == 2 {
		return time.Duration(256-int(p)) * time.Second / 256
	}
	return time.Duration(256-int(p)) * masterInterval / 256
}

// MasterDownInterval is 3 x the master's advert interval + skew time.
func MasterDownInterval(version uint8, p uint8, masterInterval time.Duration) time.Duration {
	return 3*masterInterval + SkewTime(version, p, masterInterval)
}

func (m *Machine) skew() time.Duration { return SkewTime(m.cfg.Version, m.prio, m.masterAdverInterval) }

func (m *Machine) downInterval() time.Duration {
	return MasterDownInterval(m.cfg.Version, m.prio, m.masterAdverInterval)
}

// Next returns when the machine next needs an EvTimer, or the zero time.
func (m *Machine) Next() time.Time {
	switch m.state {
	case Master:
		return earliest(m.adverTimer, m.bindAt)
	case Backup:
		return m.masterDown
	case Leaving:
		return earliest(m.adverTimer, m.leaveBy)
	}
	return time.Time{}
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Handle feeds one event at time now and returns what to do.
func (m *Machine) Handle(ev Event, now time.Time) []Action {
	switch ev.Kind {
	case EvStartup:
		if m.state != Initialize {
			return nil
		}
		if m.fault {
			return m.to(Fault, now, ev.Reason, nil)
		}
		if m.prio == 255 {
			return m.becomeMaster(now, "address owner (priority 255)", false)
		}
		return m.becomeBackup(now, "startup")
	case EvShutdown:
		return m.shutdown(now)
	case EvTimer:
		return m.timer(now)
	case EvAdvert:
		return m.advert(ev, now)
	case EvPriority:
		return m.setPriority(ev.Priority, now)
	case EvFault:
		return m.setFault(ev.Fault, ev.Reason, now)
	case EvYield:
		return m.yield(ev.Until, ev.Reason, now)
	}
	return nil
}

// yield holds the instance in Backup until until; a master steps down to it.
func (m *Machine) yield(until time.Time, reason string, now time.Time) []Action {
	if m.state != Master && m.state != Backup {
		return nil
	}
	if until.After(m.holdUntil) {
		m.holdUntil = until
	}
	if m.state == Backup {
		if m.masterDown.Before(m.holdUntil) {
			m.masterDown = m.holdUntil
		}
		return nil
	}
	acts := []Action{{Kind: ActSendAdvert, Priority: 0}}
	if m.bound { // not while settling: nothing is bound then
		acts = append(acts, Action{Kind: ActRemoveAddrs})
	}
	m.adverTimer, m.bindAt, m.bound = time.Time{}, time.Time{}, false
	m.masterAddr, m.masterPrio = netip.Addr{}, 0
	m.masterDown = m.holdUntil
	return m.to(Backup, now, reason, acts)
}

func (m *Machine) to(s State, now time.Time, reason string, acts []Action) []Action {
	if m.state == s {
		return acts
	}
	acts = append(acts, Action{Kind: ActTransition, From: m.state, To: s, Reason: reason, Priority: m.prio})
	m.state = s
	m.changed = now
	return acts
}

// becomeMaster takes over. advertFirst sends the advert before binding the addresses (after
// TakeoverSettle), so that backups whose timers run out just after ours stand down before
// they announce anything; a master that hands over (Leaving) or that we preempt releases on
// that advert, and its host keeps the addresses (deprecated) for a drain, so no packet meets
// a host without them. Otherwise (the address owner starting) they are bound at once.
func (m *Machine) becomeMaster(now time.Time, reason string, advertFirst bool) []Action {
	m.handedBy = netip.Addr{}
	if (m.masterPrio == 0 || m.preempting) && m.masterAddr.IsValid() && m.masterAddr != m.cfg.Addr {
		m.handedBy = m.masterAddr
	}
	m.masterDown = time.Time{}
	m.adverTimer = now.Add(m.cfg.Interval)
	m.masterAddr, m.masterPrio = m.cfg.Addr, m.prio
	m.lowerSince, m.preempting = time.Time{}, false
	if m.cfg.FlapMax > 0 {
		keep := m.masterTimes[:0]
		for _, t := range m.masterTimes {
			if now.Sub(t) < m.cfg.FlapWindow {
				keep = append(keep, t)
			}
		}
		m.masterTimes = append(keep, now)
	}
	acts := []Action{{Kind: ActAddAddrs}, {Kind: ActAnnounce}, {Kind: ActSendAdvert, Priority: m.prio}}
	m.bound, m.bindAt = true, time.Time{}
	switch {
	case advertFirst && m.cfg.TakeoverSettle > 0:
		acts = []Action{{Kind: ActSendAdvert, Priority: m.prio}}
		m.bound, m.bindAt = false, now.Add(m.cfg.TakeoverSettle)
	case advertFirst:
		acts = []Action{{Kind: ActSendAdvert, Priority: m.prio}, {Kind: ActAddAddrs}, {Kind: ActAnnounce}}
	}
	return m.to(Master, now, reason, acts)
}

func (m *Machine) becomeBackup(now time.Time, reason string) []Action {
	var acts []Action
	if m.state == Master && m.bound {
		// Only a better master's advert makes a master a backup: it has the addresses.
		acts = append(acts, Action{Kind: ActReleaseAddrs})
	}
	m.bound, m.bindAt = false, time.Time{}
	m.adverTimer = time.Time{}
	m.masterDown = now.Add(m.downInterval())
	return m.to(Backup, now, reason, acts)
}

func (m *Machine) shutdown(now time.Time) []Action {
	var acts []Action
	if m.state == Master && !m.bound {
		// Stopped while settling: nothing was bound or announced.
		m.bindAt = time.Time{}
		m.adverTimer, m.masterDown = time.Time{}, time.Time{}
		return m.to(Initialize, now, "shutdown", []Action{{Kind: ActSendAdvert, Priority: 0}})
	}
	switch {
	case m.state == Master && m.cfg.Handover > 0:
		m.adverTimer = now.Add(m.cfg.Interval)
		m.masterDown = time.Time{}
		m.leaveBy = now.Add(m.cfg.Handover)
		acts = append(acts, Action{Kind: ActSendAdvert, Priority: 0})
		return m.to(Leaving, now, "shutdown: handing over", acts)
	case m.state == Master:
		acts = append(acts, Action{Kind: ActSendAdvert, Priority: 0}, Action{Kind: ActRemoveAddrs})
	case m.state == Leaving:
		acts = append(acts, Action{Kind: ActRemoveAddrs})
	}
	m.adverTimer, m.masterDown, m.leaveBy = time.Time{}, time.Time{}, time.Time{}
	return m.to(Initialize, now, "shutdown", acts)
}

// leave ends a Leaving state: the addresses go (released to a new master, or removed after
// the handover timeout) and the instance is stopped.
func (m *Machine) leave(now time.Time, kind ActionKind, reason string) []Action {
	m.adverTimer, m.masterDown, m.leaveBy, m.successor = time.Time{}, time.Time{}, time.Time{}, netip.Addr{}
	return m.to(Initialize, now, reason, []Action{{Kind: kind}})
}

func (m *Machine) timer(now time.Time) []Action {
	switch m.state {
	case Master:
		var acts []Action
		if !m.bindAt.IsZero() && !now.Before(m.bindAt) {
			// No better router answered our advert: take the addresses.
			m.bindAt, m.bound = time.Time{}, true
			acts = append(acts, Action{Kind: ActAddAddrs}, Action{Kind: ActAnnounce})
		}
		if m.adverTimer.IsZero() || now.Before(m.adverTimer) {
			return acts
		}
		m.adverTimer = now.Add(m.cfg.Interval)
		return append(acts, Action{Kind: ActSendAdvert, Priority: m.prio})
	case Backup:
		if m.masterDown.IsZero() || now.Before(m.masterDown) {
			return nil
		}
		if now.Before(m.holdUntil) {
			m.masterDown = m.holdUntil
			return nil
		}
		if m.damped(now) {
			m.holdUntil = now.Add(m.cfg.FlapHold)
			m.masterDown = m.holdUntil
			m.masterTimes = m.masterTimes[:0]
			return []Action{{Kind: ActHoldDown, Until: m.holdUntil,
				Reason: fmt.Sprintf("became master more than %d times in %s", m.cfg.FlapMax, m.cfg.FlapWindow)}}
		}
		// Every backup's timer runs out within a few milliseconds of the others' (after a
		// priority 0 advert, a silent master, or a lower-priority master both preempt):
		// advertise first, so they hear of us before anything is announced. A master we
		// take over from keeps the addresses (deprecated) for its drain: no gap.
		return m.becomeMaster(now, "master down timer expired", true)
	case Leaving:
		if !m.leaveBy.IsZero() && !now.Before(m.leaveBy) {
			if m.successor.IsValid() {
				return m.leave(now, ActReleaseAddrs, fmt.Sprintf("shutdown: handed over to %s (priority %d)", m.successor, m.masterPrio))
			}
			return m.leave(now, ActRemoveAddrs, fmt.Sprintf("shutdown: no other router advertised within %s", m.cfg.Handover))
		}
		if m.adverTimer.IsZero() || now.Before(m.adverTimer) {
			return nil
		}
		// Repeat the priority 0 advert, in case the first was lost.
		m.adverTimer = now.Add(m.cfg.Interval)
		return []Action{{Kind: ActSendAdvert, Priority: 0}}
	}
	return nil
}

// damped reports whether becoming master now would exceed the flap limit.
func (m *Machine) damped(now time.Time) bool {
	if m.cfg.FlapMax <= 0 {
		return false
	}
	n := 0
	for _, t := range m.masterTimes {
		if now.Sub(t) < m.cfg.FlapWindow {
			n++
		}
	}
	return n >= m.cfg.FlapMax
}

// higher reports whether an advert (priority p from addr) wins over us.
func (m *Machine) higher(p uint8, from netip.Addr) bool {
	return p > m.prio || (p == m.prio && from.Compare(m.cfg.Addr) > 0)
}

func (m *Machine) advert(ev Event, now time.Time) []Action {
	switch m.state {
	case Backup:
		if ev.Priority == 0 {
			// The master is leaving: take over after the skew time only.
			m.preempting = false
			m.masterDown = now.Add(m.skew())
			m.masterAddr, m.masterPrio = ev.From, 0
			return nil
		}
		accept := !m.cfg.Preempt || ev.Priority >= m.prio
		if !accept && m.cfg.PreemptDelay > 0 {
			if m.lowerSince.IsZero() {
				m.lowerSince = now
			}
			accept = now.Sub(m.lowerSince) < m.cfg.PreemptDelay
		} else if accept {
			m.lowerSince = time.Time{}
		}
		if !accept {
			// Preempt: let the master down timer fire. Remember whom we preempt: a backup
			// that started after it (it never accepted one of its adverts) must still know
			// it when it takes over, so that the connections it carries are passed back
			// (HandedOverBy).
			m.preempting = true
			m.masterAddr, m.masterPrio = ev.From, ev.Priority
			return nil
		}
		m.preempting = false
		m.masterAddr, m.masterPrio = ev.From, ev.Priority
		if m.cfg.Version == 3 && ev.Interval > 0 {
			m.masterAdverInterval = ev.Interval
		}
		m.masterDown = now.Add(m.downInterval())
		if m.masterDown.Before(m.holdUntil) {
			m.masterDown = m.holdUntil
		}
		return nil
	case Master:
		if ev.Priority == 0 {
			// Another master left: assert ourselves at once.
			m.adverTimer = now.Add(m.cfg.Interval)
			return []Action{{Kind: ActSendAdvert, Priority: m.prio}}
		}
		if m.higher(ev.Priority, ev.From) {
			m.masterAddr, m.masterPrio = ev.From, ev.Priority
			if m.cfg.Version == 3 && ev.Interval > 0 {
				m.masterAdverInterval = ev.Interval
			}
			return m.becomeBackup(now, fmt.Sprintf("higher priority advert from %s (%d > %d or tie on address)", ev.From, ev.Priority, m.prio))
		}
		// A lower-priority router thinks it is master: re-assert at once (keepalived does).
		m.adverTimer = now.Add(m.cfg.Interval)
		if !m.bound {
			return []Action{{Kind: ActSendAdvert, Priority: m.prio}}
		}
		return []Action{{Kind: ActSendAdvert, Priority: m.prio}, {Kind: ActAnnounce}}
	case Fault:
		m.masterAddr, m.masterPrio = ev.From, ev.Priority
	case Leaving:
		if ev.Priority == 0 {
			return nil // another master leaving too: keep waiting for one that stays
		}
		if m.successor.IsValid() {
			return nil // already lingering
		}
		m.successor, m.masterAddr, m.masterPrio = ev.From, ev.From, ev.Priority
		if m.cfg.HandoverLinger > 0 {
			// The new master binds and announces just after this advert: keep the addresses
			// a moment longer, so that nothing sent before hosts turn to it is dropped.
			m.leaveBy = earliest(m.leaveBy, now.Add(m.cfg.HandoverLinger))
			return nil
		}
		return m.leave(now, ActReleaseAddrs, fmt.Sprintf("shutdown: handed over to %s (priority %d)", ev.From, ev.Priority))
	}
	return nil
}

func (m *Machine) setPriority(p uint8, now time.Time) []Action {
	if p == 0 {
		p = 1
	}
	if m.cfg.Priority == 255 {
		p = 255 // the address owner never lowers its priority
	}
	if p == m.prio {
		return nil
	}
	m.prio = p
	if m.state == Master {
		// Tell the backups at once so a preempting one can take over.
		m.adverTimer = now.Add(m.cfg.Interval)
		return []Action{{Kind: ActSendAdvert, Priority: m.prio}}
	}
	return nil
}

func (m *Machine) setFault(fault bool, reason string, now time.Time) []Action {
	if fault == m.fault {
		return nil
	}
	m.fault = fault
	switch {
	case fault && m.state == Master:
		acts := []Action{{Kind: ActSendAdvert, Priority: 0}, {Kind: ActRemoveAddrs}}
		m.adverTimer, m.bindAt, m.bound = time.Time{}, time.Time{}, false
		return m.to(Fault, now, reason, acts)
	case fault && m.state == Backup:
		m.masterDown = time.Time{}
		return m.to(Fault, now, reason, nil)
	case fault && m.state == Leaving:
		// The link or the service is gone: holding on helps nobody.
		return m.leave(now, ActRemoveAddrs, "shutdown: "+reason)
	case !fault && m.state == Fault:
		return m.becomeBackup(now, "fault cleared: "+reason)
	}
	return nil
}
