package bfd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Port is the UDP destination port of single-hop control packets (RFC 5881 4).
const Port = 3784

// The source ports of a session's packets (RFC 5881 4), and the TTL or hop limit they are
// sent with and must arrive with (RFC 5881 5, the Generalized TTL Security Mechanism: a
// packet from further than one hop away arrives with less).
const (
	minSourcePort = 49152
	maxSourcePort = 65535
	gtsmTTL       = 255
)

// Reasons the endpoint drops a packet before any session sees it.
const (
	DropMalformed DropReason = "malformed"  // UnmarshalBinary refused it
	DropTTL       DropReason = "ttl"        // TTL or hop limit not 255
	DropNoSession DropReason = "no-session" // no session for its discriminator or source
	DropQueue     DropReason = "queue-full" // its session is not keeping up
)

// SessionConfig is one single-hop session.
type SessionConfig struct {
	// Peer is the neighbour's address; one session per peer.
	Peer netip.Addr
	// Local is the source address; zero: the source address of the route to Peer.
	Local  netip.Addr
	Timers Timers
}

// Change is a state change of a session.
type Change struct {
	Peer     netip.Addr
	From, To State
	Diag     Diag
	// PeerRestarted: the change came with a new session of the peer (see Action).
	PeerRestarted bool
	// UpSince is when the session had come Up, for a change from Up.
	UpSince time.Time
}

// ChangeFunc is told of every state change of a session, from the session's goroutine.
type ChangeFunc func(Change)

// Endpoint runs a host's single-hop sessions: it receives every control packet on UDP
// port 3784 (one socket per address family), checks and decodes it and hands it to its
// session; each session sends from a socket of its own. Its methods are safe for
// concurrent use.
type Endpoint struct {
	log      *slog.Logger
	onChange ChangeFunc

	mu        sync.Mutex
	byDiscr   map[uint32]*Session
	byPeer    map[netip.Addr]*Session
	listeners map[bool]*net.UDPConn // by Is4
	drops     map[DropReason]uint64
	closed    bool
	wg        sync.WaitGroup
}

// NewEndpoint returns an endpoint without sessions; onChange may be nil.
func NewEndpoint(log *slog.Logger, onChange ChangeFunc) *Endpoint {
	if onChange == nil {
		onChange = func(Change) {}
	}
	return &Endpoint{log: log, onChange: onChange, byDiscr: map[uint32]*Session{}, byPeer: map[netip.Addr]*Session{},
		listeners: map[bool]*net.UDPConn{}, drops: map[DropReason]uint64{}}
}

// Add starts a session with cfg.Peer; it runs until ctx ends or Close, and then tells the
// peer it is administratively down. An error is a bad configuration or a port that cannot
// be opened (another BFD daemon on the host), not an absent peer.
func (e *Endpoint) Add(ctx context.Context, cfg SessionConfig) (*Session, error) {
	cfg.Peer = cfg.Peer.Unmap()
	cfg.Local = cfg.Local.Unmap()
	if !cfg.Peer.IsValid() || cfg.Peer.Zone() != "" {
		return nil, fmt.Errorf("bfd: peer %q is not an IP address without zone", cfg.Peer)
	}
	if cfg.Local.IsValid() && cfg.Local.Is4() != cfg.Peer.Is4() {
		return nil, fmt.Errorf("bfd: peer %s: local address %s is of the other family", cfg.Peer, cfg.Local)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("bfd: endpoint closed")
	}
	if e.byPeer[cfg.Peer] != nil {
		return nil, fmt.Errorf("bfd: peer %s has a session already", cfg.Peer)
	}
	if err := e.listenLocked(cfg.Peer.Is4()); err != nil {
		return nil, err
	}
	var discr uint32
	for discr == 0 || e.byDiscr[discr] != nil {
		discr = rand.Uint32()
	}
	m, err := NewMachine(discr, cfg.Timers, func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return rand.N(d)
	}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("bfd: peer %s: %w", cfg.Peer, err)
	}
	s := &Session{e: e, cfg: cfg, m: m, in: make(chan ControlPacket, 16), set: make(chan Timers, 1),
		done: make(chan struct{}), state: Down, since: time.Now()}
	s.snapshot()
	e.byDiscr[discr], e.byPeer[cfg.Peer] = s, s
	// The socket is opened here, in the caller's network namespace (a test's); a failure
	// (no route to the peer yet) is retried by run.
	conn, err := s.open()
	if err != nil {
		e.log.Warn("BFD: cannot open the session's socket; retrying", "peer", cfg.Peer.String(), "err", err.Error())
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		s.run(sctx, conn, err)
	}()
	return s, nil
}

// Listen opens the receiving socket of a family (is4: IPv4) now rather than at the first
// Add, so that a port taken by another BFD daemon shows at once.
func (e *Endpoint) Listen(is4 bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("bfd: endpoint closed")
	}
	return e.listenLocked(is4)
}

// Session returns the session with peer, or nil.
func (e *Endpoint) Session(peer netip.Addr) *Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byPeer[peer.Unmap()]
}

// listenLocked opens the family's receiving socket once.
func (e *Endpoint) listenLocked(is4 bool) error {
	if e.listeners[is4] != nil {
		return nil
	}
	network, any := "udp6", netip.IPv6Unspecified()
	if is4 {
		network, any = "udp4", netip.IPv4Unspecified()
	}
	l, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(any, Port)))
	if err != nil {
		return fmt.Errorf("bfd: listen on UDP port %d: %w (does another BFD daemon, such as FRR's bfdd, run on this host?)", Port, err)
	}
	// The wrappers remember the flags: readLoop must read through these very ones.
	p4, p6 := ipv4.NewPacketConn(l), ipv6.NewPacketConn(l)
	if is4 {
		err = p4.SetControlMessage(ipv4.FlagTTL, true)
	} else {
		err = p6.SetControlMessage(ipv6.FlagHopLimit, true)
	}
	if err != nil {
		l.Close()
		return fmt.Errorf("bfd: ask for the TTL of received packets: %w", err)
	}
	e.listeners[is4] = l
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.readLoop(p4, p6, is4)
	}()
	return nil
}

func (e *Endpoint) readLoop(p4 *ipv4.PacketConn, p6 *ipv6.PacketConn, is4 bool) {
	buf := make([]byte, 1500)
	for {
		var n, ttl int
		var src net.Addr
		var err error
		if is4 {
			var cm *ipv4.ControlMessage
			n, cm, src, err = p4.ReadFrom(buf)
			if cm != nil {
				ttl = cm.TTL
			}
		} else {
			var cm *ipv6.ControlMessage
			n, cm, src, err = p6.ReadFrom(buf)
			if cm != nil {
				ttl = cm.HopLimit
			}
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		ua, ok := src.(*net.UDPAddr)
		if !ok {
			continue
		}
		e.deliver(buf[:n], ttl, ua.AddrPort().Addr().Unmap())
	}
}

// deliver checks one received datagram and hands it to its session (RFC 5880 6.8.6,
// RFC 5881 5): the session of its Your Discriminator, or, when that is zero, of its source
// address; and the source must be that session's peer.
func (e *Endpoint) deliver(b []byte, ttl int, src netip.Addr) {
	if ttl != gtsmTTL {
		e.drop(DropTTL)
		return
	}
	var p ControlPacket
	if err := p.UnmarshalBinary(b); err != nil {
		e.drop(DropMalformed)
		return
	}
	e.mu.Lock()
	s := e.byPeer[src]
	if p.YourDiscriminator != 0 {
		s = e.byDiscr[p.YourDiscriminator]
	}
	e.mu.Unlock()
	if s == nil || s.cfg.Peer != src {
		e.drop(DropNoSession)
		return
	}
	select {
	case s.in <- p:
	default:
		e.drop(DropQueue)
	}
}

func (e *Endpoint) drop(r DropReason) {
	e.mu.Lock()
	e.drops[r]++
	e.mu.Unlock()
}

// Drops returns the packets dropped so far, by reason (the endpoint's and its sessions').
func (e *Endpoint) Drops() map[DropReason]uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[DropReason]uint64, len(e.drops))
	for r, n := range e.drops {
		out[r] = n
	}
	return out
}

// Sessions returns the sessions' status, in no particular order.
func (e *Endpoint) Sessions() []SessionStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]SessionStatus, 0, len(e.byPeer))
	for _, s := range e.byPeer {
		out = append(out, s.Status())
	}
	return out
}

// Close takes every session administratively down (telling the peers), waits for them
// and closes the sockets.
func (e *Endpoint) Close() {
	e.mu.Lock()
	e.closed = true
	var sessions []*Session
	for _, s := range e.byPeer {
		sessions = append(sessions, s)
	}
	e.mu.Unlock()
	for _, s := range sessions {
		s.cancel()
		<-s.done
	}
	e.mu.Lock()
	for _, l := range e.listeners {
		l.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// Session is one running session.
type Session struct {
	e      *Endpoint
	cfg    SessionConfig
	m      *Machine // owned by run
	in     chan ControlPacket
	set    chan Timers
	cancel context.CancelFunc
	done   chan struct{}

	sent, received atomic.Uint64

	mu          sync.Mutex
	state       State
	remoteState State
	diag        Diag
	remoteDiscr uint32
	txInterval  time.Duration
	detectTime  time.Duration
	since       time.Time
	flaps       uint64
}

// SessionStatus is a session as /status shows it.
type SessionStatus struct {
	Peer        string    `json:"peer"`
	State       string    `json:"state"`
	RemoteState string    `json:"remote_state"`
	Diag        string    `json:"diagnostic"`
	Since       time.Time `json:"since"`
	LocalDiscr  uint32    `json:"local_discriminator"`
	RemoteDiscr uint32    `json:"remote_discriminator"`
	// TxInterval is the negotiated transmit interval, DetectTime how long the session
	// tolerates silence from the peer, in seconds.
	TxInterval float64 `json:"tx_interval_seconds"`
	DetectTime float64 `json:"detect_time_seconds"`
	PacketsIn  uint64  `json:"packets_received"`
	PacketsOut uint64  `json:"packets_sent"`
	// Flaps counts the times the session went down from Up.
	Flaps uint64 `json:"flaps"`
	// StateValue is State as a number (0 AdminDown, 1 Down, 2 Init, 3 Up).
	StateValue State `json:"-"`
}

// Status returns the session's state and counters.
func (s *Session) Status() SessionStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SessionStatus{
		Peer: s.cfg.Peer.String(), State: s.state.String(), RemoteState: s.remoteState.String(), Diag: s.diag.String(),
		Since: s.since, LocalDiscr: s.m.LocalDiscr(), RemoteDiscr: s.remoteDiscr,
		TxInterval: s.txInterval.Seconds(), DetectTime: s.detectTime.Seconds(),
		PacketsIn: s.received.Load(), PacketsOut: s.sent.Load(), Flaps: s.flaps, StateValue: s.state,
	}
}

// SetTimers changes the session's timers (with a poll sequence while Up).
func (s *Session) SetTimers(t Timers) error {
	if err := t.Validate(); err != nil {
		return err
	}
	select {
	case s.set <- t:
	case <-s.done:
	}
	return nil
}

// snapshot copies the machine's state for Status; only run (and Add) call it.
func (s *Session) snapshot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.remoteState, s.diag = s.m.State(), s.m.RemoteState(), s.m.Diag()
	s.remoteDiscr = s.m.RemoteDiscr()
	s.txInterval, s.detectTime = s.m.TxInterval(), s.m.DetectionTime()
}

func (s *Session) run(ctx context.Context, conn *net.UDPConn, openErr error) {
	defer close(s.done)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if conn == nil {
			var err error
			if conn, err = s.open(); err != nil && (openErr == nil || err.Error() != openErr.Error()) {
				s.e.log.Warn("BFD: cannot open the session's socket; retrying", "peer", s.cfg.Peer.String(), "err", err.Error())
			}
			openErr = err
		}
		wait := time.Second // retries the socket, or nothing to do
		if next := s.m.Next(); conn != nil && !next.IsZero() {
			wait = max(0, time.Until(next))
		}
		timer.Reset(wait)
		var acts []Action
		var drop DropReason
		select {
		case <-ctx.Done():
			acts, _ = s.m.Handle(Event{Kind: EvAdminDown}, time.Now())
			s.exec(conn, acts)
			return
		case p := <-s.in:
			acts, drop = s.m.Handle(Event{Kind: EvPacket, Packet: &p}, time.Now())
			if drop != DropNone {
				s.e.drop(drop)
			} else {
				s.received.Add(1)
			}
		case t := <-s.set:
			acts, _ = s.m.Handle(Event{Kind: EvSetTimers, Timers: t}, time.Now())
		case <-timer.C:
			acts, _ = s.m.Handle(Event{Kind: EvTimer}, time.Now())
		}
		s.exec(conn, acts)
	}
}

// exec carries out the machine's actions: packets go out on conn (when it is open),
// transitions are recorded, logged and reported.
func (s *Session) exec(conn *net.UDPConn, acts []Action) {
	var changes []Change
	for _, a := range acts {
		switch a.Kind {
		case ActSend:
			if conn == nil {
				continue
			}
			b, err := a.Packet.MarshalBinary()
			if err == nil {
				// A write fails while the peer's port is closed (ICMP port unreachable on
				// the connected socket); the session's timers deal with an absent peer.
				if _, err = conn.Write(b); err == nil {
					s.sent.Add(1)
				}
			}
		case ActTransition:
			s.mu.Lock()
			c := Change{Peer: s.cfg.Peer, From: a.From, To: a.To, Diag: a.Diag, PeerRestarted: a.PeerRestarted}
			if a.From == Up {
				c.UpSince = s.since
			}
			changes = append(changes, c)
			s.since = time.Now()
			if a.From == Up {
				s.flaps++
			}
			s.mu.Unlock()
			s.e.log.Info("BFD session changed", "peer", s.cfg.Peer.String(), "from", a.From.String(), "to", a.To.String(), "diagnostic", a.Diag.String(), "peer_restarted", a.PeerRestarted)
		}
	}
	s.snapshot()
	for _, c := range changes {
		s.e.onChange(c)
	}
}

// open makes the session's sending socket: bound to the local address and a random port
// of 49152-65535 (the same for the whole session), connected to the peer's port 3784, and
// sending with TTL (hop limit) 255.
func (s *Session) open() (*net.UDPConn, error) {
	raddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(s.cfg.Peer, Port))
	local := s.cfg.Local
	if !local.IsValid() {
		c, err := net.DialUDP("udp", nil, raddr) // sends nothing: asks the routing table
		if err != nil {
			return nil, fmt.Errorf("bfd: no route to peer %s: %w", s.cfg.Peer, err)
		}
		local = c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		c.Close()
	}
	var err error
	for range 64 {
		port := minSourcePort + rand.IntN(maxSourcePort-minSourcePort+1)
		var c *net.UDPConn
		c, err = net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, uint16(port))), raddr)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bfd: open a socket from %s to %s: %w", local, raddr, err)
		}
		if s.cfg.Peer.Is4() {
			err = ipv4.NewConn(c).SetTTL(gtsmTTL)
		} else {
			err = ipv6.NewConn(c).SetHopLimit(gtsmTTL)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("bfd: set TTL 255: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("bfd: no free source port from %s: %w", local, err)
}
