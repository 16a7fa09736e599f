package bfd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms    = time.Millisecond
	fast  = Timers{DesiredMinTx: 100 * ms, RequiredMinRx: 100 * ms, DetectMult: 3}
	local = uint32(0x1111)
	peer  = uint32(0x2222)
)

// from builds a packet from the peer in state st, which knows our discriminator unless st
// is Down or AdminDown.
func from(st State) *ControlPacket {
	p := &ControlPacket{State: st, DetectMult: 3, MyDiscriminator: peer,
		DesiredMinTxInterval: 100 * ms, RequiredMinRxInterval: 100 * ms}
	if st == Init || st == Up {
		p.YourDiscriminator = local
	}
	return p
}

// summarize turns actions into strings: "Down->Init(none)", "send:Init", "send:Up+P".
func summarize(acts []Action) []string {
	var out []string
	for _, a := range acts {
		switch a.Kind {
		case ActTransition:
			out = append(out, fmt.Sprintf("%s->%s(%s)", a.From, a.To, a.Diag))
		case ActSend:
			s := "send:" + a.Packet.State.String()
			if a.Packet.Poll {
				s += "+P"
			}
			if a.Packet.Final {
				s += "+F"
			}
			out = append(out, s)
		}
	}
	return out
}

// machineIn returns a machine brought to st by packets from the peer.
func machineIn(t *testing.T, st State) *Machine {
	t.Helper()
	m, err := NewMachine(local, fast, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	path := map[State][]State{Down: nil, Init: {Down}, Up: {Down, Up}, AdminDown: nil}[st]
	for _, p := range path {
		m.Handle(Event{Kind: EvPacket, Packet: from(p)}, t0)
	}
	if st == AdminDown {
		m.Handle(Event{Kind: EvAdminDown}, t0)
	}
	if m.State() != st {
		t.Fatalf("setup: machine in %s, want %s", m.State(), st)
	}
	return m
}

// TestReceptionTransitions is the state table of RFC 5880 6.8.6 (and the diagram of 6.2):
// every local state against every state the peer can report.
func TestReceptionTransitions(t *testing.T) {
	cases := []struct {
		local, remote State
		want          []string
		state         State
		drop          DropReason
	}{
		{Down, AdminDown, nil, Down, DropNone},
		{Down, Down, []string{"Down->Init(none)", "send:Init"}, Init, DropNone},
		{Down, Init, []string{"Down->Up(none)", "send:Up+P"}, Up, DropNone},
		{Down, Up, nil, Down, DropNone},
		{Init, AdminDown, []string{"Init->Down(neighbor signaled session down)", "send:Down"}, Down, DropNone},
		{Init, Down, nil, Init, DropNone},
		{Init, Init, []string{"Init->Up(none)", "send:Up+P"}, Up, DropNone},
		{Init, Up, []string{"Init->Up(none)", "send:Up+P"}, Up, DropNone},
		{Up, AdminDown, []string{"Up->Down(neighbor signaled session down)", "send:Down"}, Down, DropNone},
		{Up, Down, []string{"Up->Down(neighbor signaled session down)", "send:Down"}, Down, DropNone},
		{Up, Init, nil, Up, DropNone},
		{Up, Up, nil, Up, DropNone},
		{AdminDown, AdminDown, nil, AdminDown, DropAdminDown},
		{AdminDown, Down, nil, AdminDown, DropAdminDown},
		{AdminDown, Init, nil, AdminDown, DropAdminDown},
		{AdminDown, Up, nil, AdminDown, DropAdminDown},
	}
	for _, c := range cases {
		t.Run(c.local.String()+"+"+c.remote.String(), func(t *testing.T) {
			m := machineIn(t, c.local)
			acts, drop := m.Handle(Event{Kind: EvPacket, Packet: from(c.remote)}, t0.Add(10*ms))
			if got := summarize(acts); !slices.Equal(got, c.want) {
				t.Errorf("actions %q, want %q", got, c.want)
			}
			if m.State() != c.state || drop != c.drop {
				t.Errorf("state %s drop %q, want %s %q", m.State(), drop, c.state, c.drop)
			}
			if c.drop == DropNone && m.RemoteDiscr() != peer {
				t.Errorf("remote discriminator %x, want %x", m.RemoteDiscr(), peer)
			}
		})
	}
}

func TestDiscriminators(t *testing.T) {
	m := machineIn(t, Up)
	p := from(Up)
	p.YourDiscriminator = 0x9999
	if acts, drop := m.Handle(Event{Kind: EvPacket, Packet: p}, t0); drop != DropDiscr || acts != nil {
		t.Errorf("packet for another discriminator: drop %q actions %v", drop, summarize(acts))
	}
	sent := m.Packet()
	if sent.MyDiscriminator != local || sent.YourDiscriminator != peer || sent.State != Up || sent.DetectMult != 3 {
		t.Errorf("packet %+v", sent)
	}
	if _, err := NewMachine(0, fast, nil, t0); err == nil {
		t.Error("discriminator 0 accepted")
	}
	if _, err := NewMachine(1, Timers{DesiredMinTx: ms, RequiredMinRx: 100 * ms, DetectMult: 0}, nil, t0); err == nil ||
		!strings.Contains(err.Error(), "transmit interval") || !strings.Contains(err.Error(), "multiplier") {
		t.Errorf("bad timers: %v", err)
	}
}

// TestDetectionTimeout: a session that hears nothing for the detection time goes Down
// (diagnostic 1) from Init or Up and forgets the peer's discriminator (6.8.1, 6.8.4); a
// packet just before the deadline pushes it out.
func TestDetectionTimeout(t *testing.T) {
	for _, st := range []State{Init, Up} {
		t.Run(st.String(), func(t *testing.T) {
			m := machineIn(t, st)
			if d := m.DetectionTime(); d != 300*ms {
				t.Fatalf("detection time %s, want 3 x 100ms", d)
			}
			m.Handle(Event{Kind: EvPacket, Packet: from(Up)}, t0.Add(250*ms))
			if st == Init {
				m.Handle(Event{Kind: EvPacket, Packet: from(Init)}, t0.Add(250*ms)) // now Up
				st = Up
			}
			acts, _ := m.Handle(Event{Kind: EvTimer}, t0.Add(549*ms))
			if m.State() != st || slices.ContainsFunc(acts, func(a Action) bool { return a.Kind == ActTransition }) {
				t.Fatalf("down before the detection time: %s %v", m.State(), summarize(acts))
			}
			acts, _ = m.Handle(Event{Kind: EvTimer}, t0.Add(550*ms))
			if want := "Up->Down(control detection time expired)"; !slices.Contains(summarize(acts), want) {
				t.Fatalf("actions %v, want %s", summarize(acts), want)
			}
			if m.State() != Down || m.Diag() != DiagControlDetectExpired || m.RemoteDiscr() != 0 || m.Packet().Diag != DiagControlDetectExpired {
				t.Errorf("after timeout: %s diag %s remote %x", m.State(), m.Diag(), m.RemoteDiscr())
			}
			if m.TxInterval() != SlowTxInterval {
				t.Errorf("tx interval while Down %s, want %s", m.TxInterval(), SlowTxInterval)
			}
		})
	}
}

// TestDetectionUsesLargerInterval: the detection time is the peer's multiplier times the
// larger of our required receive interval and its desired transmit interval (6.8.4).
func TestDetectionUsesLargerInterval(t *testing.T) {
	m := machineIn(t, Up)
	p := from(Up)
	p.DetectMult, p.DesiredMinTxInterval = 5, 300*ms
	m.Handle(Event{Kind: EvPacket, Packet: p}, t0)
	if d := m.DetectionTime(); d != 1500*ms {
		t.Errorf("detection time %s, want 5 x 300ms", d)
	}
}

// TestTransmitInterval: slow (1 s) until Up, then the larger of ours and the peer's
// required receive interval; jitter takes off at most a quarter (6.8.7); a peer asking
// for no packets (Required Min RX 0) gets none, but still its Final.
func TestTransmitInterval(t *testing.T) {
	m, _ := NewMachine(local, fast, func(d time.Duration) time.Duration { return d - 1 }, t0)
	acts, _ := m.Handle(Event{Kind: EvTimer}, t0)
	if got := summarize(acts); !slices.Equal(got, []string{"send:Down"}) || acts[0].Packet.DesiredMinTxInterval != SlowTxInterval {
		t.Fatalf("first packet %v %+v", got, acts)
	}
	if next := m.Next().Sub(t0); next <= 750*ms || next > SlowTxInterval {
		t.Errorf("next packet after %s, want within 750ms-1s", next)
	}
	m.Handle(Event{Kind: EvPacket, Packet: from(Init)}, t0.Add(10*ms))
	p := from(Up)
	p.RequiredMinRxInterval = 200 * ms
	p.Final = true // ends our poll (Down -> Up)
	m.Handle(Event{Kind: EvPacket, Packet: p}, t0.Add(20*ms))
	if m.TxInterval() != 200*ms || m.Polling() {
		t.Errorf("tx interval %s polling %v, want the peer's 200ms, poll over", m.TxInterval(), m.Polling())
	}
	p = from(Up)
	p.RequiredMinRxInterval = 0
	m.Handle(Event{Kind: EvPacket, Packet: p}, t0.Add(30*ms))
	if acts, _ := m.Handle(Event{Kind: EvTimer}, t0.Add(250*ms)); slices.ContainsFunc(acts, func(a Action) bool { return a.Kind == ActSend }) {
		t.Errorf("sent %v to a peer that requires no packets", summarize(acts))
	}
	p.Poll = true
	acts, _ = m.Handle(Event{Kind: EvPacket, Packet: p}, t0.Add(260*ms))
	if got := summarize(acts); !slices.Equal(got, []string{"send:Up+F"}) {
		t.Errorf("answer to a poll %v", got)
	}
}

// TestPollSequence: changing the timers while Up polls (6.5, 6.8.3): our packets carry P
// until the peer's Final; a raised transmit interval and a lowered receive interval take
// effect only then; a poll from the peer is answered at once with F (never P and F).
func TestPollSequence(t *testing.T) {
	m := machineIn(t, Up)
	if !m.Polling() || !m.Packet().Poll {
		t.Fatal("going Up from the slow interval did not start a poll sequence")
	}
	fin := from(Up)
	fin.Final = true
	m.Handle(Event{Kind: EvPacket, Packet: fin}, t0)
	if m.Polling() || m.TxInterval() != 100*ms {
		t.Fatalf("after Final: polling %v tx %s", m.Polling(), m.TxInterval())
	}
	slow := Timers{DesiredMinTx: 500 * ms, RequiredMinRx: 50 * ms, DetectMult: 3}
	acts, _ := m.Handle(Event{Kind: EvSetTimers, Timers: slow}, t0.Add(10*ms))
	if got := summarize(acts); !slices.Equal(got, []string{"send:Up+P"}) || acts[0].Packet.DesiredMinTxInterval != 500*ms || acts[0].Packet.RequiredMinRxInterval != 50*ms {
		t.Fatalf("on change %v %+v", got, acts)
	}
	m.Handle(Event{Kind: EvPacket, Packet: from(Up)}, t0.Add(20*ms))
	if m.TxInterval() != 100*ms || m.DetectionTime() != 300*ms {
		t.Errorf("during the poll: tx %s detect %s, want the old 100ms and 300ms", m.TxInterval(), m.DetectionTime())
	}
	peerPoll := from(Up)
	peerPoll.Poll = true
	acts, _ = m.Handle(Event{Kind: EvPacket, Packet: peerPoll}, t0.Add(30*ms))
	if got := summarize(acts); !slices.Equal(got, []string{"send:Up+F"}) {
		t.Errorf("answer to the peer's poll during ours: %v", got)
	}
	if acts, _ := m.Handle(Event{Kind: EvTimer}, m.Next()); !slices.Equal(summarize(acts), []string{"send:Up+P"}) {
		t.Errorf("periodic packet during the poll: %v", summarize(acts))
	}
	m.Handle(Event{Kind: EvPacket, Packet: fin}, t0.Add(200*ms))
	if m.Polling() || m.TxInterval() != 500*ms || m.DetectionTime() != 300*ms || m.Packet().Poll {
		t.Errorf("after Final: polling %v tx %s detect %s", m.Polling(), m.TxInterval(), m.DetectionTime())
	}
	// The peer's desired transmit interval (100ms) now sets detection: 3 x max(50, 100).
	down := Timers{DesiredMinTx: 100 * ms, RequiredMinRx: 400 * ms, DetectMult: 3}
	m.Handle(Event{Kind: EvSetTimers, Timers: down}, t0.Add(300*ms))
	m.Handle(Event{Kind: EvPacket, Packet: from(Up)}, t0.Add(310*ms))
	if m.TxInterval() != 100*ms || m.DetectionTime() != 1200*ms {
		t.Errorf("lowered tx, raised rx: tx %s detect %s, want 100ms at once and 3 x 400ms", m.TxInterval(), m.DetectionTime())
	}
	if acts, _ := m.Handle(Event{Kind: EvSetTimers, Timers: down}, t0.Add(320*ms)); acts != nil {
		t.Errorf("unchanged timers: %v", summarize(acts))
	}
}

// TestSetTimersWhileDown: no poll outside Up; the new values go out with the next packet.
func TestSetTimersWhileDown(t *testing.T) {
	m := machineIn(t, Down)
	t2 := Timers{DesiredMinTx: 300 * ms, RequiredMinRx: 300 * ms, DetectMult: 5}
	if acts, _ := m.Handle(Event{Kind: EvSetTimers, Timers: t2}, t0); acts != nil || m.Polling() {
		t.Errorf("actions %v polling %v", summarize(acts), m.Polling())
	}
	if p := m.Packet(); p.RequiredMinRxInterval != 300*ms || p.DetectMult != 5 || p.DesiredMinTxInterval != SlowTxInterval {
		t.Errorf("packet %+v", p)
	}
}

// TestAdminDown: taking a session down tells the peer (state AdminDown, diagnostic 7) and
// stops detection; admin up returns to Down, and the handshake brings it Up again.
func TestAdminDown(t *testing.T) {
	m := machineIn(t, Up)
	acts, _ := m.Handle(Event{Kind: EvAdminDown}, t0.Add(10*ms))
	if got := summarize(acts); !slices.Equal(got, []string{"Up->AdminDown(administratively down)", "send:AdminDown"}) {
		t.Fatalf("admin down: %v", got)
	}
	if acts, _ := m.Handle(Event{Kind: EvTimer}, t0.Add(time.Hour)); slices.ContainsFunc(acts, func(a Action) bool { return a.Kind == ActTransition }) {
		t.Errorf("timer in AdminDown: %v", summarize(acts))
	}
	acts, _ = m.Handle(Event{Kind: EvAdminUp}, t0.Add(time.Hour))
	if got := summarize(acts); !slices.Equal(got, []string{"AdminDown->Down(administratively down)"}) {
		t.Errorf("admin up: %v", got)
	}
	m.Handle(Event{Kind: EvPacket, Packet: from(Init)}, t0.Add(time.Hour))
	if m.State() != Up {
		t.Errorf("state %s after the peer's Init", m.State())
	}
}

// TestDemandMode: a peer in demand mode (D set, both Up) gets no periodic packets (6.8.7).
func TestDemandMode(t *testing.T) {
	m := machineIn(t, Up)
	p := from(Up)
	p.Demand = true
	m.Handle(Event{Kind: EvPacket, Packet: p}, t0)
	if acts, _ := m.Handle(Event{Kind: EvTimer}, t0.Add(200*ms)); slices.ContainsFunc(acts, func(a Action) bool { return a.Kind == ActSend }) {
		t.Errorf("periodic packet in demand mode: %v", summarize(acts))
	}
}

// TestPeerRestarted: a Down from a new session of the peer (another discriminator, Your
// Discriminator zero) takes the session Down as any Down does, marked as a restart; a Down
// from the same session (its detection timer ran out) is not.
func TestPeerRestarted(t *testing.T) {
	for _, c := range []struct {
		name      string
		discr     uint32
		restarted bool
	}{{"new session", 0x3333, true}, {"same session", peer, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := machineIn(t, Up)
			p := from(Down)
			p.MyDiscriminator = c.discr
			acts, _ := m.Handle(Event{Kind: EvPacket, Packet: p}, t0)
			if len(acts) == 0 || acts[0].Kind != ActTransition || acts[0].To != Init && acts[0].To != Down || acts[0].PeerRestarted != c.restarted {
				t.Fatalf("actions %+v, want a transition with PeerRestarted %v", acts, c.restarted)
			}
			if m.RemoteDiscr() != c.discr {
				t.Errorf("remote discriminator %x, want %x", m.RemoteDiscr(), c.discr)
			}
		})
	}
}
