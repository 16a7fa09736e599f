package bgp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
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
