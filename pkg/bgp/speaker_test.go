package bgp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
)

// rib returns the prefixes of one family in the speaker's own RIB, with the next hop and
// communities each was given.
func rib(t *testing.T, s *Speaker, afi api.Family_Afi) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.srv.ListPath(context.Background(), &api.ListPathRequest{
		TableType: api.TableType_GLOBAL, Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST},
	}, func(d *api.Destination) {
		for _, p := range d.GetPaths() {
			var nh, comm string
			for _, a := range p.GetPattrs() {
				m, err := a.UnmarshalNew()
				if err != nil {
					t.Errorf("attribute of %s: %v", d.GetPrefix(), err)
					continue
				}
				switch v := m.(type) {
				case *api.NextHopAttribute:
					nh = v.GetNextHop()
				case *api.MpReachNLRIAttribute:
					nh = v.GetNextHops()[0]
				case *api.CommunitiesAttribute:
					for _, c := range v.GetCommunities() {
						comm += fmt.Sprintf(" %d:%d", c>>16, c&0xFFFF)
					}
				}
			}
			out[d.GetPrefix()] = "nh=" + nh + comm
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAnnounceWithdraw runs a speaker whose peers (on loopback) never answer, and checks
// what it would send: /32 and /128 host routes with the configured next hop and
// communities in its RIB after Announce, gone after Withdraw; Stop with nothing announced
// returns at once.
func TestAnnounceWithdraw(t *testing.T) {
	cfg := Config{
		AS: 65100, RouterID: netip.MustParseAddr("10.77.41.11"),
		Peers: []Peer{
			{Addr: netip.MustParseAddr("127.0.0.1"), AS: 65000, Port: 1, HoldTime: 9 * time.Second, Keepalive: 3 * time.Second},
			{Addr: netip.MustParseAddr("::1"), AS: 65000, Port: 1},
		},
		NextHop:     netip.MustParseAddr("10.77.41.11"),
		Communities: []uint32{65100<<16 | 443},
	}
	ctx := context.Background()
	s, err := Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	v4, v6 := HostRoute(netip.MustParseAddr("10.77.45.100")), HostRoute(netip.MustParseAddr("fd00::100"))
	if err := s.Announce(ctx, v4, v6); err != nil {
		t.Fatal(err)
	}
	if err := s.Announce(ctx, v4); err != nil { // again: no duplicate path
		t.Fatal(err)
	}
	if got := rib(t, s, api.Family_AFI_IP); len(got) != 1 || got["10.77.45.100/32"] != "nh=10.77.41.11 65100:443" {
		t.Errorf("IPv4 RIB = %v", got)
	}
	if got := rib(t, s, api.Family_AFI_IP6); len(got) != 1 || got["fd00::100/128"] != "nh=:: 65100:443" {
		t.Errorf("IPv6 RIB = %v", got)
	}
	if got := s.Announced(); len(got) != 2 || got[0] != v4 || got[1] != v6 {
		t.Errorf("Announced = %v", got)
	}
	peers, err := s.Peers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 || peers[0].Address != "127.0.0.1" || peers[1].Address != "::1" || peers[0].Established() || peers[0].HoldTime != 9 {
		t.Errorf("Peers = %+v", peers)
	}
	if err := s.Withdraw(ctx, v4, v6); err != nil {
		t.Fatal(err)
	}
	if got := rib(t, s, api.Family_AFI_IP); len(got) != 0 {
		t.Errorf("IPv4 RIB after Withdraw = %v", got)
	}
	if got := rib(t, s, api.Family_AFI_IP6); len(got) != 0 {
		t.Errorf("IPv6 RIB after Withdraw = %v", got)
	}
	if err := s.Announce(ctx, v4); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	hooked := false
	if err := s.Stop(sctx, 0, func() { hooked = len(s.Announced()) == 0 }); err != nil {
		t.Fatal(err)
	}
	if !hooked {
		t.Error("Stop did not call its hook after withdrawing")
	}
	if len(s.Announced()) != 0 {
		t.Errorf("Announced after Stop = %v", s.Announced())
	}
	if err := s.Announce(ctx, v4); err == nil {
		t.Error("Announce after Stop succeeded")
	}
}

// waitFor polls cond until it holds or a minute has passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// peerState returns the speaker's only peer's status.
func peerState(t *testing.T, s *Speaker) PeerStatus {
	t.Helper()
	ps, err := s.Peers(context.Background())
	if err != nil || len(ps) != 1 {
		t.Fatalf("Peers = %v, %v", ps, err)
	}
	return ps[0]
}

// startPeer runs a GoBGP server on 127.0.0.1:port that accepts a session from the speaker
// (AS 65100 on 127.0.0.1) and opens none itself, as a router does for vipd.
func startPeer(t *testing.T, port int) *server.BgpServer {
	t.Helper()
	quiet := &logger{log: slog.New(slog.NewTextHandler(io.Discard, nil)), errs: map[string]string{}}
	srv := server.NewBgpServer(server.LoggerOption(quiet))
	go srv.Serve()
	ctx := context.Background()
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: 65000, RouterId: "10.77.41.1", ListenPort: int32(port), ListenAddresses: []string{"127.0.0.1"},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.StopBgp(context.Background(), &api.StopBgpRequest{})
		srv.Stop()
	})
	if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: 65100},
		Transport: &api.Transport{PassiveMode: true},
		// Back to accepting sessions 1 s after it resets one, not GoBGP's 30 s.
		Timers: &api.Timers{Config: &api.TimersConfig{IdleHoldTimeAfterReset: 1}},
	}}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestReconnect: a session whose attempt was refused, which GoBGP would next try an hour
// later (ConnectRetry), is left alone by Reconnect without evenActive and comes up as soon
// as Reconnect with evenActive is called once the peer listens; an established session is
// left alone; a session the peer closed (idle) comes back with Reconnect, the flap still
// counted.
func TestReconnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens: the speaker's first attempt is refused
	peer := netip.MustParseAddr("127.0.0.1")
	cfg := Config{
		AS: 65100, RouterID: netip.MustParseAddr("10.77.41.11"),
		Peers:        []Peer{{Addr: peer, AS: 65000, Port: uint16(port), HoldTime: 9 * time.Second, Keepalive: 3 * time.Second}},
		ConnectRetry: time.Hour,
	}
	ctx := context.Background()
	s, err := Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background(), 0, nil) })
	if err := s.Announce(ctx, HostRoute(netip.MustParseAddr("10.77.45.100"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first attempt refused", func() bool {
		return strings.Contains(peerState(t, s).LastError, "connection refused")
	})
	router := startPeer(t, port)
	if replaced, err := s.Reconnect(ctx, peer, false); err != nil || replaced {
		t.Fatalf("Reconnect of an active session without evenActive = %v, %v; want it left alone", replaced, err)
	}
	if replaced, err := s.Reconnect(ctx, peer, true); err != nil || !replaced {
		t.Fatalf("Reconnect of a session waiting to retry = %v, %v; want it replaced", replaced, err)
	}
	waitFor(t, "the session established after Reconnect", func() bool { return peerState(t, s).Established() })
	waitFor(t, "the route sent on the new session", func() bool { return peerState(t, s).PrefixesSent == 1 })

	if replaced, err := s.Reconnect(ctx, peer, true); err != nil || replaced {
		t.Fatalf("Reconnect of an established session = %v, %v; want it left alone", replaced, err)
	}
	if st := peerState(t, s); !st.Established() || st.Flaps != 0 {
		t.Fatalf("after Reconnect of an established session: %+v", st)
	}

	if err := router.ResetPeer(ctx, &api.ResetPeerRequest{Address: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session closed by the peer", func() bool { return !peerState(t, s).Established() })
	// Idle now (GoBGP's 5 s idle hold): replaced even without evenActive.
	if replaced, err := s.Reconnect(ctx, peer, false); err != nil || !replaced {
		t.Fatalf("Reconnect of a session the peer closed = %v, %v; want it replaced", replaced, err)
	}
	waitFor(t, "the session established again", func() bool { return peerState(t, s).Established() })
	if st := peerState(t, s); st.Flaps != 1 {
		t.Errorf("flaps after the peer closed the session once = %d, want 1", st.Flaps)
	}
	if _, err := s.Reconnect(ctx, netip.MustParseAddr("127.0.0.2"), true); err == nil {
		t.Error("Reconnect of an address that is not a peer succeeded")
	}
}
