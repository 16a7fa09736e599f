package bfd

import (
	"errors"
	"fmt"
	"time"
)

// SlowTxInterval is the least transmit interval while a session is not Up (RFC 5880 6.8.3:
// bfd.DesiredMinTxInterval at least one second), so that a peer that is not there costs
// one packet a second.
const SlowTxInterval = time.Second

// Timers are a session's negotiable parameters (RFC 5880 6.8.1).
type Timers struct {
	// DesiredMinTx is bfd.DesiredMinTxInterval once Up: how often we want to transmit.
	DesiredMinTx time.Duration
	// RequiredMinRx is bfd.RequiredMinRxInterval: the least interval between the peer's
	// packets we can take; with DetectMult it sets how fast we notice a dead peer.
	RequiredMinRx time.Duration
	// DetectMult is bfd.DetectMult: packets the peer may miss before we declare it down.
	DetectMult uint8
}

// Validate checks t.
func (t Timers) Validate() error {
	var errs []error
	if t.DesiredMinTx < 10*time.Millisecond || t.DesiredMinTx > time.Minute {
		errs = append(errs, fmt.Errorf("bfd: transmit interval must be 10ms to 1m, got %s", t.DesiredMinTx))
	}
	if t.RequiredMinRx < 10*time.Millisecond || t.RequiredMinRx > time.Minute {
		errs = append(errs, fmt.Errorf("bfd: receive interval must be 10ms to 1m, got %s", t.RequiredMinRx))
	}
	if t.DetectMult < 2 {
		errs = append(errs, fmt.Errorf("bfd: detect multiplier must be 2 to 255, got %d", t.DetectMult))
	}
	return errors.Join(errs...)
}

// EventKind says what happened to a session.
type EventKind uint8

const (
	// EvPacket is a decoded control packet for this session (Event.Packet).
	EvPacket EventKind = iota
	// EvTimer is sent when the time returned by Machine.Next has come.
	EvTimer
	// EvAdminDown takes the session administratively down (it tells the peer so).
	EvAdminDown
	// EvAdminUp lets an AdminDown session come up again.
	EvAdminUp
	// EvSetTimers changes the timers (Event.Timers), with a poll sequence if Up.
	EvSetTimers
)

// Event is an input to the state machine.
type Event struct {
	Kind   EventKind
	Packet *ControlPacket
	Timers Timers
}

// ActionKind says what the host must do.
type ActionKind uint8

const (
	// ActSend: transmit Action.Packet.
	ActSend ActionKind = iota
	// ActTransition: the session went from Action.From to Action.To, for Action.Diag.
	ActTransition
)

// Action is an output of the state machine.
type Action struct {
	Kind     ActionKind
	Packet   ControlPacket
	From, To State
	Diag     Diag
	// PeerRestarted marks a transition caused by a packet from a new session of the peer
	// (another My Discriminator than the one it had: its BFD daemon restarted or
	// re-created the session). The path is fine, the peer's old session is gone.
	PeerRestarted bool
}

// DropReason says why Machine.Handle discarded a packet that decoded well.
type DropReason string

// The reasons a session discards a packet (RFC 5880 6.8.6).
const (
	DropNone      DropReason = ""
	DropAdminDown DropReason = "admin-down"    // our session is AdminDown
	DropDiscr     DropReason = "discriminator" // Your Discriminator is not ours
)

// Machine is one BFD session in asynchronous mode without echo (RFC 5880 6.8), as pure
// code: Handle takes an event and the current time and returns what to send and which
// transitions happened; Next says when to call it with EvTimer. It is not safe for
// concurrent use.
type Machine struct {
	// RFC 5880 6.8.1 state variables.
	state, remoteState State
	localDiscr         uint32
	remoteDiscr        uint32
	localDiag          Diag
	remoteMinRx        time.Duration // bfd.RemoteMinRxInterval
	remoteDemand       bool
	timers             Timers // configured; DesiredMinTx applies only while Up

	// Transmission and detection.
	remoteTx   time.Duration // the peer's last Desired Min TX Interval
	remoteMult uint8
	nextTx     time.Time
	detectAt   time.Time // zero: not armed
	// A poll sequence in progress (6.5): old are the timers the peer knew before it;
	// until its Final, transmission uses the smaller interval and detection the larger.
	polling bool
	old     Timers
	oldTx   time.Duration // the DesiredMinTx advertised before the poll (slow while not Up)
	jitter  func(max time.Duration) time.Duration
}

// NewMachine returns a session in state Down with the local discriminator discr (nonzero,
// unique among the host's sessions). jitter returns a random duration in [0, max) and may
// be nil (no jitter: tests).
func NewMachine(discr uint32, t Timers, jitter func(max time.Duration) time.Duration, now time.Time) (*Machine, error) {
	if discr == 0 {
		return nil, errors.New("bfd: the local discriminator must not be zero")
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if jitter == nil {
		jitter = func(time.Duration) time.Duration { return 0 }
	}
	return &Machine{
		state: Down, remoteState: Down, localDiscr: discr, timers: t,
		remoteMinRx: time.Microsecond, // 6.8.1: initialised to 1
		jitter:      jitter,
		nextTx:      now,
	}, nil
}

// State returns the session state.
func (m *Machine) State() State { return m.state }

// Diag returns the local diagnostic: why the session last left Up.
func (m *Machine) Diag() Diag { return m.localDiag }

// LocalDiscr returns our discriminator.
func (m *Machine) LocalDiscr() uint32 { return m.localDiscr }

// RemoteDiscr returns the peer's discriminator, zero while unknown.
func (m *Machine) RemoteDiscr() uint32 { return m.remoteDiscr }

// RemoteState returns the state the peer last reported.
func (m *Machine) RemoteState() State { return m.remoteState }

// Polling reports whether a poll sequence is in progress.
func (m *Machine) Polling() bool { return m.polling }

// desiredTx is the Desired Min TX Interval we advertise now: the configured one while Up,
// at least SlowTxInterval otherwise.
func (m *Machine) desiredTx() time.Duration {
	if m.state == Up {
		return m.timers.DesiredMinTx
	}
	return max(m.timers.DesiredMinTx, SlowTxInterval)
}

// TxInterval is the interval between our periodic packets before jitter (6.8.2, 6.8.7):
// the larger of what we want and what the peer can take; during a poll sequence that
// raises our interval, the old one until the peer has seen the new (6.8.3).
func (m *Machine) TxInterval() time.Duration {
	tx := m.desiredTx()
	if m.polling {
		tx = min(tx, m.oldTx)
	}
	return max(tx, m.remoteMinRx)
}

// DetectionTime is how long the session tolerates silence from the peer (6.8.4): the
// peer's multiplier times the larger of our required receive interval and its desired
// transmit interval; during a poll sequence that lowers our receive interval, the old one.
func (m *Machine) DetectionTime() time.Duration {
	rx := m.timers.RequiredMinRx
	if m.polling {
		rx = max(rx, m.old.RequiredMinRx)
	}
	return time.Duration(m.remoteMult) * max(rx, m.remoteTx)
}

// Next returns when Handle wants an EvTimer: the next periodic transmission or the
// detection timeout, whichever comes first. The zero time: nothing is due (the peer
// asked for no transmission and nothing is being detected).
func (m *Machine) Next() time.Time {
	next := m.detectAt
	if m.transmitting() && (next.IsZero() || m.nextTx.Before(next)) {
		next = m.nextTx
	}
	return next
}

// transmitting reports whether periodic transmission runs (6.8.7): not when the peer
// requires no packets (Required Min RX 0), nor in demand mode once both sides are Up.
func (m *Machine) transmitting() bool {
	if m.remoteMinRx == 0 {
		return false
	}
	return !(m.remoteDemand && m.state == Up && m.remoteState == Up)
}

// Packet is the control packet we would send now (6.8.7).
func (m *Machine) Packet() ControlPacket {
	return ControlPacket{
		Diag: m.localDiag, State: m.state, Poll: m.polling,
		DetectMult: m.timers.DetectMult, MyDiscriminator: m.localDiscr, YourDiscriminator: m.remoteDiscr,
		DesiredMinTxInterval: m.desiredTx(), RequiredMinRxInterval: m.timers.RequiredMinRx,
	}
}

// Handle applies ev at now. It returns what to send and the transitions, and, for an
// EvPacket the session discards, why.
func (m *Machine) Handle(ev Event, now time.Time) ([]Action, DropReason) {
	var acts []Action
	var drop DropReason
	switch ev.Kind {
	case EvPacket:
		acts, drop = m.receive(ev.Packet, now)
	case EvTimer:
		acts = m.timer(now)
	case EvAdminDown:
		if m.state != AdminDown {
			acts = m.transition(AdminDown, DiagAdminDown, now)
			m.detectAt = time.Time{}
			acts = append(acts, m.send(now, false))
		}
	case EvAdminUp:
		if m.state == AdminDown {
			acts = m.transition(Down, DiagNone, now)
		}
	case EvSetTimers:
		acts = m.setTimers(ev.Timers, now)
	}
	return acts, drop
}

// transition moves to state to with diagnostic diag, and applies what the change means
// for the advertised interval: entering Up switches from the slow interval to the
// configured one with a poll sequence (6.8.3), leaving it back to the slow one.
func (m *Machine) transition(to State, diag Diag, now time.Time) []Action {
	from := m.state
	if from == to {
		return nil
	}
	oldTx := m.desiredTx()
	m.state = to
	if diag != DiagNone || to == Up {
		m.localDiag = diag
	}
	if to == Up && m.desiredTx() != oldTx {
		m.startPoll(m.timers, oldTx)
	}
	if from == Up {
		m.polling = false // a poll sequence ends with the session
	}
	return []Action{{Kind: ActTransition, From: from, To: to, Diag: m.localDiag}}
}

func (m *Machine) startPoll(old Timers, oldTx time.Duration) {
	if !m.polling {
		m.old, m.oldTx = old, oldTx
	} else {
		// A change during a poll: keep the most conservative of everything the peer may
		// still be using.
		m.old.RequiredMinRx = max(m.old.RequiredMinRx, old.RequiredMinRx)
		m.oldTx = min(m.oldTx, oldTx)
	}
	m.polling = true
}

func (m *Machine) setTimers(t Timers, now time.Time) []Action {
	if t.Validate() != nil || t == m.timers {
		return nil
	}
	old, oldTx := m.timers, m.desiredTx()
	m.timers = t
	if m.state != Up {
		return nil // the new values go out with the next packet; no poll needed (6.8.3)
	}
	m.startPoll(old, oldTx)
	return []Action{m.send(now, false)}
}

// send builds a packet, final answering a poll, and schedules the next periodic one.
func (m *Machine) send(now time.Time, final bool) Action {
	p := m.Packet()
	if final {
		p.Poll, p.Final = false, true
	} else {
		m.scheduleTx(now)
	}
	return Action{Kind: ActSend, Packet: p}
}

// scheduleTx sets the next periodic transmission: the interval less 0-25% of jitter, or
// 10-25% with a detect multiplier of 1 (6.8.7).
func (m *Machine) scheduleTx(now time.Time) {
	iv := m.TxInterval()
	j := m.jitter(iv / 4)
	if m.timers.DetectMult == 1 {
		j = max(j, iv/10)
	}
	m.nextTx = now.Add(iv - j)
}

func (m *Machine) timer(now time.Time) []Action {
	var acts []Action
	if !m.detectAt.IsZero() && !now.Before(m.detectAt) {
		m.detectAt = time.Time{}
		// 6.8.1: the peer's discriminator is forgotten after a detection time of silence;
		// 6.8.4: an Init or Up session goes Down.
		m.remoteDiscr = 0
		m.remoteState = Down
		m.remoteDemand = false
		if m.state == Init || m.state == Up {
			acts = append(acts, m.transition(Down, DiagControlDetectExpired, now)...)
		}
	}
	if m.transmitting() && !now.Before(m.nextTx) {
		acts = append(acts, m.send(now, false))
	}
	return acts
}

// receive is RFC 5880 6.8.6 for a packet that passed UnmarshalBinary's checks.
func (m *Machine) receive(p *ControlPacket, now time.Time) ([]Action, DropReason) {
	if p == nil {
		return nil, DropDiscr
	}
	if p.YourDiscriminator != 0 && p.YourDiscriminator != m.localDiscr {
		return nil, DropDiscr
	}
	restarted := m.remoteDiscr != 0 && p.MyDiscriminator != m.remoteDiscr
	m.remoteDiscr = p.MyDiscriminator
	m.remoteState = p.State
	m.remoteDemand = p.Demand
	wasTransmitting := m.transmitting()
	m.remoteMinRx = p.RequiredMinRxInterval
	m.remoteTx = p.DesiredMinTxInterval
	m.remoteMult = p.DetectMult
	if p.Final && m.polling {
		m.polling = false
	}
	// 6.8.4: the detection timer restarts with every packet that is not discarded; it
	// takes an Init or Up session down, and makes any session forget the peer's
	// discriminator (6.8.1).
	m.detectAt = now.Add(m.DetectionTime())
	if m.state == AdminDown {
		return nil, DropAdminDown
	}
	var acts []Action
	switch {
	case p.State == AdminDown:
		if m.state != Down {
			acts = m.transition(Down, DiagNeighborDown, now)
		}
	case m.state == Down:
		switch p.State {
		case Down:
			acts = m.transition(Init, DiagNone, now)
		case Init:
			acts = m.transition(Up, DiagNone, now)
		}
	case m.state == Init:
		if p.State == Init || p.State == Up {
			acts = m.transition(Up, DiagNone, now)
		}
	default: // Up
		if p.State == Down {
			acts = m.transition(Down, DiagNeighborDown, now)
		}
	}
	if restarted && len(acts) > 0 {
		acts[0].PeerRestarted = true
	}
	switch {
	case p.Poll:
		// 6.8.6: answer a poll at once, without regard to the transmit timer (a
		// Final never carries a Poll, so a state change follows in a packet of its own).
		acts = append(acts, m.send(now, true))
		if len(acts) > 1 {
			acts = append(acts, m.send(now, false))
		}
	case len(acts) > 0:
		// A state change goes out at once rather than at the next periodic packet, so
		// that the three-way handshake takes one round trip.
		acts = append(acts, m.send(now, false))
	case !wasTransmitting && m.transmitting():
		m.nextTx = now
	default:
		// The interval may have shrunk (the peer's Required Min RX): do not wait out a
		// longer one scheduled before.
		if next := now.Add(m.TxInterval()); m.nextTx.After(next) {
			m.nextTx = next
		}
	}
	return acts, DropNone
}
