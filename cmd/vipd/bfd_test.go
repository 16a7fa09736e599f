package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
)

// The router's side of BFD as an operator of FRR writes it: bfdd with a 100 ms x 3 profile,
// and bgpd tying each neighbour's session to it.
const (
	bfddConf = `hostname router
log stdout informational
bfd
 profile fast
  transmit-interval 100
  receive-interval 100
  detect-multiplier 3
 !
!
`
	frrBFDConf = `frr defaults datacenter
hostname router
log stdout informational
router bgp 65000
 bgp router-id 10.77.41.1
 no bgp ebgp-requires-policy
 neighbor 10.77.41.11 remote-as 65100
 neighbor 10.77.41.11 bfd profile fast
 neighbor 10.77.42.12 remote-as 65100
 neighbor 10.77.42.12 bfd profile fast
 address-family ipv4 unicast
  maximum-paths 8
 exit-address-family
`
)

// bfdPeer returns the state FRR's bfdd reports for its session with addr ("up", "down",
// "init", "shutdown"; "" when it has none).
func (f *frr) bfdPeer(addr string) string {
	out, err := f.vtyshErr("show bfd peers json")
	if err != nil {
		return ""
	}
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	if json.Unmarshal([]byte(out), &peers) != nil {
		return ""
	}
	for _, p := range peers {
		if p.Peer == addr {
			return p.Status
		}
	}
	return ""
}

// bfdState returns the state of h's vipd's first BFD session and its diagnostic.
func bfdState(h *netns.Host) (state, diag string) {
	st, err := getStatus(h)
	if err != nil || st.BGP == nil || len(st.BGP.BFD) == 0 {
		return "", ""
	}
	return st.BGP.BFD[0].State, st.BGP.BFD[0].Diag
}

func bfdUp(f *frr, h *netns.Host) bool {
	s, _ := bfdState(h)
	return s == "Up" && f.bfdPeer(h.Addr.String()) == "up"
}

// TestBGPBFDWithFRR: two masters run vipd with --bfd 100ms x 3 against FRR's bfdd and bgpd
// (neighbor X bfd profile fast). The BFD sessions come up on both sides. A frozen vipd
// (SIGSTOP: its TCP session stays open, so only BFD can tell) loses its route as soon as the
// router's bfdd declares it down, long before the 9 s hold timer: FRR's bgpd says the session
// was reset for BFD; then SIGKILL, and a restarted vipd comes back Up with its route. When the
// router's bfdd freezes instead, vipd's session times out (control detection time expired)
// and vipd resets its BGP session; both recover when bfdd runs again.
func TestBGPBFDWithFRR(t *testing.T) {
	rn := newRoutedNet(t, "hb-d")
	f := startFRRWithBFD(t, rn.router, frrBFDConf, bfddConf)
	m1, m2 := rn.masters[0], rn.masters[1]
	bfdArgs := func(i int) []string {
		return vipdArgs(rn, i, "--check-url", "", "--bfd", "--bfd-interval", "100ms", "--bfd-multiplier", "3")
	}
	p1 := startVipd(t, m1, bfdArgs(0)...)
	startVipd(t, m2, bfdArgs(1)...)
	both := addrs(m1, m2)
	waitFor(t, 60*time.Second, "FRR has a path to the VIP through both masters", func() bool { return equal(f.nexthops(), both) })
	for _, m := range []*netns.Host{m1, m2} {
		waitFor(t, 30*time.Second, m.Name+"'s BFD session Up at vipd and at FRR's bfdd", func() bool { return bfdUp(f, m) })
	}
	metrics, err := m2.Get(statusAt, "/metrics", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`vipd_bfd_session_state{peer="10.77.42.1"} 3`, `vipd_bfd_packets_dropped_total{reason="ttl"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("m2 /metrics lacks %s:\n%s", want, metrics)
		}
	}

	t.Run("frozen vipd loses its route by BFD", func(t *testing.T) {
		p1.Signal(syscall.SIGSTOP)
		waitFor(t, 30*time.Second, "FRR's bfdd declares m1 down", func() bool { return f.bfdPeer(m1.Addr.String()) == "down" })
		waitFor(t, 30*time.Second, "FRR without m1's path", func() bool { return equal(f.nexthops(), addrs(m2)) })
		// FRR 8.4 sends its own NOTIFICATION "Cease/BFD Down" (RFC 9384) and says so.
		if out := f.vtysh(t, "show bgp neighbors "+m1.Addr.String()+" json"); !strings.Contains(out, "BFD Down") {
			t.Errorf("FRR did not reset the session with m1 for BFD:\n%s", out)
		}
		p1.Signal(syscall.SIGKILL)
		waitExit(t, p1)
	})

	t.Run("restarted vipd comes back", func(t *testing.T) {
		startVipd(t, m1, bfdArgs(0)...)
		waitFor(t, 60*time.Second, "m1's BFD session Up again", func() bool { return bfdUp(f, m1) })
		waitFor(t, 60*time.Second, "FRR has both paths again", func() bool { return equal(f.nexthops(), both) })
	})

	t.Run("frozen bfdd: vipd resets the BGP session", func(t *testing.T) {
		var bfdd *netns.Proc
		for _, p := range rn.router.Procs() {
			if p.Name == "bfdd" {
				bfdd = p
			}
		}
		if bfdd == nil {
			t.Fatal("no bfdd process in the router")
		}
		st, err := getStatus(m2)
		if err != nil {
			t.Fatal(err)
		}
		flaps := st.BGP.Peers[0].Flaps
		bfdd.Signal(syscall.SIGSTOP)
		waitFor(t, 30*time.Second, "m2's BFD session down by detection timeout", func() bool {
			s, d := bfdState(m2)
			return s == "Down" && d == "control detection time expired"
		})
		waitFor(t, 30*time.Second, "m2's BGP session reset", func() bool {
			st, err := getStatus(m2)
			return err == nil && st.BGP.Peers[0].Flaps > flaps
		})
		bfdd.Signal(syscall.SIGCONT)
		waitFor(t, 60*time.Second, "m2's BFD session Up again", func() bool { return bfdUp(f, m2) })
		waitFor(t, 60*time.Second, "FRR has both paths again", func() bool { return equal(f.nexthops(), both) })
	})
}
