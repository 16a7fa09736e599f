// Package bgp announces virtual IP addresses as host routes (/32 for IPv4, /128 for IPv6)
// to BGP neighbours with an embedded GoBGP speaker (github.com/osrg/gobgp/v3), for hosts
// that share no layer-2 segment. It knows sessions and routes; when to announce is the
// caller's business (package vip).
package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Config is the speaker's configuration.
type Config struct {
	AS       uint32
	RouterID netip.Addr // an IPv4 address that names the speaker
	// ListenPort is the TCP port the speaker accepts sessions on; 0: it does not listen
	// and opens every session itself (the neighbour must then not be passive).
	ListenPort uint16
	Peers      []Peer
	// NextHop of the announced routes; zero: the session's own local address
	// (next-hop-self), which is what a neighbour one hop away needs.
	NextHop     netip.Addr
	Communities []uint32
	// ConnectRetry is the interval between attempts to open a session that is down
	// (GoBGP adds up to as much again at random); 0: 5s.
	ConnectRetry time.Duration
	// OnSessionChange, if not nil, is told when a session becomes established or stops
	// being so, from GoBGP's event goroutine.
	OnSessionChange func(peer netip.Addr, established bool)
}

// Validate checks cfg without touching the network.
func (c *Config) Validate() error {
	var errs []error
	if c.AS == 0 || c.AS == 23456 {
		errs = append(errs, ErrBadAS)
	}
	if !c.RouterID.Is4() {
		errs = append(errs, fmt.Errorf("bgp: router ID must be an IPv4 address, got %q", c.RouterID))
	}
	if len(c.Peers) == 0 {
		errs = append(errs, errors.New("bgp: at least one peer is needed"))
	}
	seen := map[netip.Addr]bool{}
	for _, p := range c.Peers {
		if seen[p.Addr] {
			errs = append(errs, fmt.Errorf("bgp: peer %s is listed twice", p.Addr))
		}
		seen[p.Addr] = true
		if p.AS == 0 || p.AS == 23456 {
			errs = append(errs, fmt.Errorf("bgp: peer %s: %w", p.Addr, ErrBadAS))
		}
		if p.HoldTime != 0 && (p.HoldTime < 3*time.Second || p.HoldTime > 65535*time.Second) {
			errs = append(errs, fmt.Errorf("bgp: peer %s: hold time must be 0 or 3s to 65535s (RFC 4271), got %s", p.Addr, p.HoldTime))
		}
		if p.Keepalive < 0 || (p.HoldTime != 0 && p.Keepalive >= p.HoldTime) {
			errs = append(errs, fmt.Errorf("bgp: peer %s: keepalive %s must be shorter than the hold time %s", p.Addr, p.Keepalive, p.HoldTime))
		}
		if p.Source.IsValid() && p.Source.Is4() != p.Addr.Is4() {
			errs = append(errs, fmt.Errorf("bgp: peer %s: source address %s is of the other family", p.Addr, p.Source))
		}
	}
	return errors.Join(errs...)
}

// ErrStopped is returned by the calls that change a speaker after Stop.
var ErrStopped = errors.New("bgp: speaker stopped")

// Speaker is a running BGP speaker. Its methods are safe for concurrent use.
type Speaker struct {
	cfg Config
	log *slog.Logger
	srv *server.BgpServer
	gl  *logger

	mu        sync.Mutex
	announced map[netip.Prefix]bool
	uuids     map[netip.Prefix][]byte
	stopped   bool
	// flaps counts, by peer address, the flaps of the peers Reconnect replaced.
	flaps map[string]uint32
}

// Start starts the speaker and configures its peers; GoBGP then opens the sessions and
// keeps retrying those that fail, for ever. An error here is a configuration the speaker
// rejected, not an unreachable peer.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Speaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ConnectRetry <= 0 {
		cfg.ConnectRetry = 5 * time.Second
	}
	gl := &logger{log: log.With("component", "gobgp"), as: cfg.AS, routerID: cfg.RouterID, errs: map[string]string{}}
	srv := server.NewBgpServer(server.LoggerOption(gl))
	go srv.Serve()
	s := &Speaker{cfg: cfg, log: log, srv: srv, gl: gl, announced: map[netip.Prefix]bool{}, uuids: map[netip.Prefix][]byte{}, flaps: map[string]uint32{}}
	port := int32(-1) // GoBGP: do not listen
	if cfg.ListenPort != 0 {
		port = int32(cfg.ListenPort)
	}
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: cfg.AS, RouterId: cfg.RouterID.String(), ListenPort: port,
	}}); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("bgp: start speaker AS %d router ID %s: %w", cfg.AS, cfg.RouterID, err)
	}
	for _, p := range cfg.Peers {
		if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: s.apiPeer(p)}); err != nil {
			_ = srv.StopBgp(context.Background(), &api.StopBgpRequest{})
			srv.Stop()
			return nil, fmt.Errorf("bgp: add peer %s: %w", p, err)
		}
	}
	if err := srv.WatchEvent(ctx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, s.peerEvent); err != nil {
		log.Warn("cannot watch BGP peer events; session changes are not logged", "err", err.Error())
	}
	return s, nil
}

func families(p Peer) []*api.AfiSafi {
	afi := api.Family_AFI_IP
	if p.Addr.Is6() {
		afi = api.Family_AFI_IP6
	}
	// The session's own family only: routes of the other family would need a next hop
	// of that family, which a next-hop-self session cannot give.
	return []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}}
}

func (s *Speaker) apiPeer(p Peer) *api.Peer {
	ap := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: p.Addr.String(), PeerAsn: p.AS, AuthPassword: p.Password},
		Timers: &api.Timers{Config: &api.TimersConfig{
			ConnectRetry: uint64(max(1, s.cfg.ConnectRetry/time.Second)),
			// After ResetPeer (BFD down) the session is opened again 2-3 s later (1 s idle,
			// then GoBGP's first attempt), not after GoBGP's default 30 s.
			IdleHoldTimeAfterReset: 1,
			HoldTime:               uint64(p.HoldTime / time.Second),
			KeepaliveInterval:      uint64(p.Keepalive / time.Second),
		}},
		Transport: &api.Transport{RemotePort: uint32(p.Port)},
		AfiSafis:  families(p),
	}
	if p.Source.IsValid() {
		ap.Transport.LocalAddress = p.Source.String()
	}
	if p.Multihop > 0 {
		ap.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.Multihop)}
	}
	return ap
}

func (s *Speaker) peerEvent(r *api.WatchEventResponse) {
	pe := r.GetPeer()
	if pe == nil || pe.GetPeer() == nil || pe.Type != api.WatchEventResponse_PeerEvent_STATE {
		return
	}
	st := pe.GetPeer().GetState()
	s.log.Info("BGP session changed", "peer", st.GetNeighborAddress(), "as", st.GetPeerAsn(), "state", sessionState(st.GetSessionState()))
	if a, err := netip.ParseAddr(st.GetNeighborAddress()); err == nil && s.cfg.OnSessionChange != nil {
		s.cfg.OnSessionChange(a.Unmap(), st.GetSessionState() == api.PeerState_ESTABLISHED)
	}
}

// path builds the announcement of p with the configured next hop and communities.
func (s *Speaker) path(p netip.Prefix, withdraw bool) (*api.Path, error) {
	nlri, err := anypb.New(&api.IPAddressPrefix{Prefix: p.Addr().String(), PrefixLen: uint32(p.Bits())})
	if err != nil {
		return nil, err
	}
	origin, _ := anypb.New(&api.OriginAttribute{Origin: 0}) // IGP
	attrs := []*anypb.Any{origin}
	family := &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	if p.Addr().Is4() {
		nh := "0.0.0.0" // GoBGP: the session's local address
		if s.cfg.NextHop.Is4() {
			nh = s.cfg.NextHop.String()
		}
		a, _ := anypb.New(&api.NextHopAttribute{NextHop: nh})
		attrs = append(attrs, a)
	} else {
		family.Afi = api.Family_AFI_IP6
		nh := "::"
		if s.cfg.NextHop.Is6() {
			nh = s.cfg.NextHop.String()
		}
		a, _ := anypb.New(&api.MpReachNLRIAttribute{Family: family, NextHops: []string{nh}, Nlris: []*anypb.Any{nlri}})
		attrs = append(attrs, a)
	}
	if len(s.cfg.Communities) > 0 {
		a, _ := anypb.New(&api.CommunitiesAttribute{Communities: s.cfg.Communities})
		attrs = append(attrs, a)
	}
	return &api.Path{Family: family, Nlri: nlri, Pattrs: attrs, IsWithdraw: withdraw}, nil
}

// Announce advertises the host routes to every peer (now, and to each peer whose session
// comes up later); prefixes already announced are left alone.
func (s *Speaker) Announce(ctx context.Context, ps ...netip.Prefix) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	var errs []error
	for _, p := range ps {
		if s.announced[p] {
			continue
		}
		path, err := s.path(p, false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp, err := s.srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: path})
		if err != nil {
			errs = append(errs, fmt.Errorf("bgp: announce %s: %w", p, err))
			continue
		}
		s.announced[p] = true
		s.uuids[p] = resp.GetUuid()
	}
	return errors.Join(errs...)
}

// Withdraw withdraws the host routes from every peer.
func (s *Speaker) Withdraw(ctx context.Context, ps ...netip.Prefix) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.withdrawLocked(ctx, ps)
}

func (s *Speaker) withdrawLocked(ctx context.Context, ps []netip.Prefix) error {
	var errs []error
	for _, p := range ps {
		if !s.announced[p] {
			continue
		}
		if err := s.srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Uuid: s.uuids[p]}); err != nil {
			errs = append(errs, fmt.Errorf("bgp: withdraw %s: %w", p, err))
			continue
		}
		delete(s.announced, p)
		delete(s.uuids, p)
	}
	return errors.Join(errs...)
}

// ResetPeer tears the session with addr down at once (a CEASE notification, administrative
// reset, with reason as its text) and lets it be opened again as after any failure: what
// a BFD session that went down asks of BGP (RFC 5882 4.3). The routes learnt from addr go,
// those announced to it are sent again when the session is back.
func (s *Speaker) ResetPeer(ctx context.Context, addr netip.Addr, reason string) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return ErrStopped // GoBGP's calls would wait for ever
	}
	if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: addr.String(), Communication: reason}); err != nil {
		return fmt.Errorf("bgp: reset session with %s: %w", addr, err)
	}
	return nil
}

// Reconnect opens the session with addr now if it is idle (or, with evenActive, also if it
// is active: waiting to connect), rather than when GoBGP would: after a session went down
// GoBGP stays idle 5 s (1 s after ResetPeer), then waits 1-2 s before its first attempt and
// ConnectRetry (plus as much again at random) after every failed one. It replaces the peer
// with a new one of the same configuration, which is active at once: it accepts the peer's
// connection (if the speaker listens) and tries itself within 1-2 s. What a BFD session
// asks of BGP when the path works again (FRR's bgpd opens a session at once when its BFD
// session comes Up). A session that is established or being opened is left alone. It
// reports whether it replaced the peer.
func (s *Speaker) Reconnect(ctx context.Context, addr netip.Addr, evenActive bool) (bool, error) {
	addr = addr.Unmap()
	i := slices.IndexFunc(s.cfg.Peers, func(p Peer) bool { return p.Addr == addr })
	if i < 0 {
		return false, fmt.Errorf("bgp: reconnect: %s is not a configured peer", addr)
	}
	// Held throughout, so that Stop and other calls never see the peer missing.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false, ErrStopped
	}
	var state api.PeerState_SessionState
	var flaps uint32
	found := false
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{Address: addr.String()}, func(p *api.Peer) {
		state, flaps, found = p.GetState().GetSessionState(), p.GetState().GetFlops(), true
	})
	if err != nil || !found {
		return false, fmt.Errorf("bgp: reconnect %s: no such peer in GoBGP: %v", addr, err)
	}
	if state != api.PeerState_IDLE && (!evenActive || state != api.PeerState_ACTIVE) {
		return false, nil
	}
	if err := s.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()}); err != nil {
		return false, fmt.Errorf("bgp: reconnect %s: remove the peer: %w", addr, err)
	}
	s.flaps[addr.String()] += flaps
	if err := s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: s.apiPeer(s.cfg.Peers[i])}); err != nil {
		// The configuration was accepted at Start; should GoBGP refuse it now, the
		// session is gone until vipd restarts, which the caller must make loud.
		return false, fmt.Errorf("bgp: reconnect %s: add the peer again: %w", addr, err)
	}
	return true, nil
}

// Announced returns the prefixes currently announced, sorted.
func (s *Speaker) Announced() []netip.Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []netip.Prefix
	for p := range s.announced {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}

// PeerStatus is one neighbour's session as /status shows it.
type PeerStatus struct {
	Address string `json:"address"`
	AS      uint32 `json:"as"`
	// State is the session's FSM state: idle, connect, active, opensent, openconfirm or
	// established.
	State string `json:"state"`
	// Since is when the session was last established; zero while it is not.
	Since time.Time `json:"since,omitzero"`
	// Uptime is how long the session has been established, in seconds.
	Uptime float64 `json:"uptime_seconds"`
	// HoldTime and Keepalive are the negotiated timers while established, the
	// configured ones otherwise, in seconds.
	HoldTime  uint64 `json:"hold_time_seconds"`
	Keepalive uint64 `json:"keepalive_seconds"`
	// PrefixesSent is how many routes the peer has been sent and not withdrawn.
	PrefixesSent     uint64 `json:"prefixes_sent"`
	PrefixesReceived uint64 `json:"prefixes_received"`
	// Flaps counts the times the session went down after being established.
	Flaps uint32 `json:"flaps"`
	// LastError is the last error GoBGP reported for this peer (a NOTIFICATION sent or
	// received, a failed connection), so a wrong AS or an unreachable peer shows here.
	LastError string `json:"last_error,omitempty"`
}

// Established reports whether the session is up.
func (p PeerStatus) Established() bool { return p.State == "established" }

// Peers returns every neighbour's session state, in configuration order.
func (s *Speaker) Peers(ctx context.Context) ([]PeerStatus, error) {
	var out []PeerStatus
	// Under s.mu: never between Reconnect's removal of a peer and its return.
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
		st := p.GetState()
		ps := PeerStatus{
			Address: p.GetConf().GetNeighborAddress(),
			AS:      p.GetConf().GetPeerAsn(),
			State:   sessionState(st.GetSessionState()),
			Flaps:   st.GetFlops(),
		}
		ts, tc := p.GetTimers().GetState(), p.GetTimers().GetConfig()
		ps.HoldTime, ps.Keepalive = tc.GetHoldTime(), tc.GetKeepaliveInterval()
		if ps.Established() {
			if ts.GetNegotiatedHoldTime() != 0 {
				ps.HoldTime = ts.GetNegotiatedHoldTime()
			}
			if ts.GetKeepaliveInterval() != 0 {
				ps.Keepalive = ts.GetKeepaliveInterval()
			}
			if up := ts.GetUptime(); up != nil && up.GetSeconds() > 0 {
				ps.Since = up.AsTime()
				ps.Uptime = time.Since(ps.Since).Round(time.Millisecond).Seconds()
			}
		}
		for _, af := range p.GetAfiSafis() {
			ps.PrefixesSent += af.GetState().GetAdvertised()
			ps.PrefixesReceived += af.GetState().GetReceived()
		}
		ps.LastError = s.gl.lastError(ps.Address)
		out = append(out, ps)
	})
	if err != nil {
		return nil, fmt.Errorf("bgp: list peers: %w", err)
	}
	for i := range out {
		out[i].Flaps += s.flaps[out[i].Address]
	}
	order := map[string]int{}
	for i, p := range s.cfg.Peers {
		order[p.Addr.String()] = i
	}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Address] < order[out[j].Address] })
	return out, nil
}

// Stop withdraws every announced route, waits (until ctx ends) for the established peers
// to have been sent the withdrawals, calls withdrawn (if not nil), waits grace more, then
// closes the sessions with a CEASE notification. Withdrawing first lets each router move
// traffic while this host still answers.
func (s *Speaker) Stop(ctx context.Context, grace time.Duration, withdrawn func()) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	var ps []netip.Prefix
	for p := range s.announced {
		ps = append(ps, p)
	}
	err := s.withdrawLocked(ctx, ps)
	s.mu.Unlock()
	if len(ps) > 0 {
		s.waitWithdrawn(ctx)
	}
	if withdrawn != nil {
		withdrawn()
	}
	if len(ps) > 0 {
		t := time.NewTimer(grace)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	err = errors.Join(err, s.srv.StopBgp(context.Background(), &api.StopBgpRequest{}))
	s.srv.Stop()
	return err
}

// waitWithdrawn polls until no established peer counts a prefix sent by us, or ctx ends.
func (s *Speaker) waitWithdrawn(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		peers, err := s.Peers(ctx)
		if err != nil {
			return
		}
		pending := false
		for _, p := range peers {
			if p.Established() && p.PrefixesSent > 0 {
				pending = true
			}
		}
		if !pending {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sessionState(s api.PeerState_SessionState) string {
	switch s {
	case api.PeerState_IDLE:
		return "idle"
	case api.PeerState_CONNECT:
		return "connect"
	case api.PeerState_ACTIVE:
		return "active"
	case api.PeerState_OPENSENT:
		return "opensent"
	case api.PeerState_OPENCONFIRM:
		return "openconfirm"
	case api.PeerState_ESTABLISHED:
		return "established"
	}
	return "unknown"
}

// logger sends GoBGP's log to slog and remembers each peer's last warning or error.
type logger struct {
	log      *slog.Logger
	as       uint32
	routerID netip.Addr

	mu   sync.Mutex
	errs map[string]string // peer address -> last error
}

func (l *logger) attrs(fields gobgplog.Fields) []any {
	out := make([]any, 0, 2*len(fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fields[k]
		if m, ok := v.(proto.Message); ok {
			v = fmt.Sprint(m)
		}
		out = append(out, k, v)
	}
	return out
}

func (l *logger) remember(msg string, fields gobgplog.Fields) {
	text := msg
	if e, ok := fields["Error"]; ok {
		text += ": " + fmt.Sprint(e)
	} else if r, ok := fields["Reason"]; ok {
		text += ": " + fmt.Sprint(r)
	} else if d, ok := fields["Data"]; ok {
		text += ": " + fmt.Sprint(d)
	}
	l.rememberText(fields, text)
}

func (l *logger) rememberText(fields gobgplog.Fields, text string) {
	key, _ := fields["Key"].(string)
	if _, err := netip.ParseAddr(key); err != nil {
		return
	}
	l.mu.Lock()
	l.errs[key] = text
	l.mu.Unlock()
}

func (l *logger) lastError(peer string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs[peer]
}

// GoBGP calls Panic and Fatal for states it cannot continue from; the daemon keeps its own
// process and logs them as errors.
func (l *logger) Panic(msg string, f gobgplog.Fields) { l.Error(msg, f) }
func (l *logger) Fatal(msg string, f gobgplog.Fields) { l.Error(msg, f) }
func (l *logger) Error(msg string, f gobgplog.Fields) {
	l.remember(msg, f)
	l.log.Error(msg, l.attrs(f)...)
}
func (l *logger) Warn(msg string, f gobgplog.Fields) {
	l.remember(msg, f)
	l.log.Warn(msg, l.attrs(f)...)
}
func (l *logger) Info(msg string, f gobgplog.Fields) {
	switch msg {
	case "Peer Up":
		if key, ok := f["Key"].(string); ok {
			l.mu.Lock()
			delete(l.errs, key)
			l.mu.Unlock()
		}
	case "Peer Down":
		l.remember(msg, f)
	}
	l.log.Info(msg, l.attrs(f)...)
}
func (l *logger) Debug(msg string, f gobgplog.Fields) {
	// A peer that cannot be reached shows only here: GoBGP logs failed connection
	// attempts at debug level.
	switch msg {
	case "failed to connect":
		l.remember(msg, f)
	case "state changed":
		// GoBGP drops a NOTIFICATION received before the session is established (a
		// wrong AS, a wrong password's silence shows as a failed connection instead);
		// the state change is all that is left of it.
		from, to := fmt.Sprint(f["old"]), fmt.Sprint(f["new"])
		if to == "BGP_FSM_IDLE" && (from == "BGP_FSM_OPENSENT" || from == "BGP_FSM_OPENCONFIRM") {
			l.rememberText(f, fmt.Sprintf("session closed during the OPEN exchange (%s, %v): the peer refused this speaker's OPEN; check that it expects AS %d and router ID %s from this address",
				strings.TrimPrefix(from, "BGP_FSM_"), f["reason"], l.as, l.routerID))
		}
	}
	l.log.Debug(msg, l.attrs(f)...)
}

// SetLevel is ignored: the slog handler decides what is written.
func (l *logger) SetLevel(gobgplog.LogLevel) {}

// GetLevel is always debug, so that GoBGP reports failed connections; the slog handler
// drops the debug lines unless --log-level debug.
func (l *logger) GetLevel() gobgplog.LogLevel { return gobgplog.DebugLevel }
