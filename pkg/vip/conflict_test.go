package vip_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/vip"
)

// linkLocalReady turns duplicate address detection off on the hosts' eth0 and waits until
// their link-local addresses are usable (the NDP sockets bind to them).
func linkLocalReady(t *testing.T, hosts ...*netns.Host) {
	t.Helper()
	for _, h := range hosts {
		h.Run("sysctl", "-q", "-w", "net.ipv6.conf.eth0.accept_dad=0")
		waitFor(t, 10*time.Second, h.Name+" link-local address ready", func() bool {
			out, _ := h.Exec("ip", "-6", "addr", "show", "dev", "eth0", "scope", "link")
			return strings.Contains(out, "fe80::") && !strings.Contains(out, "tentative")
		})
	}
}

// conflictOf returns the first instance's conflict view, and whether /status answered.
func conflictOf(h *netns.Host) (vip.InstanceStatus, bool) {
	st, err := getStatus(h)
	if err != nil || len(st.Instances) == 0 {
		return vip.InstanceStatus{}, false
	}
	return st.Instances[0], st.Conflict == st.Instances[0].Conflict
}

// conflictMetric returns the value of vipd_vip_conflict or vipd_vip_conflicts_total for
// addr, or -1 without the series.
func conflictMetric(t *testing.T, h *netns.Host, name, addr string) int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + name + `\{instance="vrid51",vip="` + regexp.QuoteMeta(addr) + `"\} (\d+)$`)
	m := re.FindStringSubmatch(fetch(t, h, "/metrics"))
	if m == nil {
		return -1
	}
	var v int
	fmt.Sscan(m[1], &v)
	return v
}

// TestConflictKeepalivedPassword: vipd and keepalived share VRID 51 with different VRRPv2
// passwords, so each drops the other's adverts and both hold the VIP. vipd reports the
// conflict (keepalived's MAC answering its ARP probes, keepalived's adverts dropped for
// authentication) in /status, /metrics and one ERROR line; with the password fixed on
// keepalived's side the conflict ends, and the episode stays counted.
func TestConflictKeepalivedPassword(t *testing.T) {
	n := netns.New(t, "hc-", subnet)
	kh, vh := n.AddHost("ka", 11), n.AddHost("vd", 12)
	k := keepalived{version: 2, interval: time.Second, authPass: "other", prio: 101}
	kp := k.start(t, kh)
	waitFor(t, 20*time.Second, "keepalived holds the VIP", func() bool { return hasVIP(t, kh, vipA) })
	v := startVipd(t, vh, baseArgs(100, "--version-vrrp", "2", "--advert-interval", "1s", "--auth-pass", "secret1")...)

	waitFor(t, 60*time.Second, "vipd reports the conflict", func() bool {
		in, ok := conflictOf(vh)
		return ok && in.Conflict && in.State == "MASTER"
	})
	in, _ := conflictOf(vh)
	c := in.Conflicts[0]
	t.Logf("conflict reported %s after vipd became MASTER (vipd's clock; probes every 1s, adverts every 1s)", c.Since.Sub(in.LastTransition).Round(time.Millisecond))
	if len(in.Conflicts) != 1 || c.VIP.String() != vipA || in.ConflictEpisodes != 1 {
		t.Fatalf("conflicts %+v, episodes %d", in.Conflicts, in.ConflictEpisodes)
	}
	if !slices.Contains(c.Senders, kh.Addr.String()+" (auth)") {
		t.Fatalf("keepalived's dropped adverts are not named: %+v", c)
	}
	// keepalived's MAC answers the probes; the grace window after vipd's takeover may still
	// hide it at the first report.
	waitFor(t, 30*time.Second, "keepalived's MAC named", func() bool {
		in, _ := conflictOf(vh)
		return len(in.Conflicts) == 1 && slices.Contains(in.Conflicts[0].MACs, mac(t, kh)+" (arp)")
	})
	if g, e := conflictMetric(t, vh, "vipd_vip_conflict", vipA), conflictMetric(t, vh, "vipd_vip_conflicts_total", vipA); g != 1 || e != 1 {
		t.Fatalf("vipd_vip_conflict %d, vipd_vip_conflicts_total %d; want 1, 1\n%s\n%s", g, e, v.Output(), kp.Output())
	}
	if out := v.Output(); strings.Count(out, `level=ERROR msg="VIP conflict`) != 1 || !strings.Contains(out, "vip="+vipA) {
		t.Fatalf("want one ERROR line naming the VIP:\n%s", out)
	}

	// Fix the password on keepalived's side: it comes back as BACKUP, preempts vipd (101 >
	// 100), and vipd follows it.
	kp.Signal(syscall.SIGTERM)
	waitExit(t, kp)
	k.authPass = "secret1"
	k.start(t, kh)
	waitFor(t, 60*time.Second, "vipd BACKUP behind keepalived, conflict over", func() bool {
		in, ok := conflictOf(vh)
		return ok && !in.Conflict && in.State == "BACKUP" && in.MasterAddr == kh.Addr.String() && hasVIP(t, kh, vipA)
	})
	if g, e := conflictMetric(t, vh, "vipd_vip_conflict", vipA), conflictMetric(t, vh, "vipd_vip_conflicts_total", vipA); g != 0 || e != 1 {
		t.Fatalf("after the fix: vipd_vip_conflict %d, vipd_vip_conflicts_total %d; want 0, 1", g, e)
	}
	if !strings.Contains(v.Output(), `msg="VIP conflict over"`) {
		t.Fatalf("the end of the conflict is not logged:\n%s", v.Output())
	}
}

// TestConflictFailoversRaiseNone: keepalived and two vipd with the same password hand the
// VIP around (graceful stops, a crash, preemption), with probes every 100 ms so that they
// catch every old master still answering while it lingers and drains: no conflict episode.
func TestConflictFailoversRaiseNone(t *testing.T) {
	n := netns.New(t, "hc-", subnet)
	kh, m1, m2 := n.AddHost("ka", 11), n.AddHost("m1", 12), n.AddHost("m2", 13)
	k := keepalived{version: 2, interval: time.Second, authPass: "secret1", prio: 101}
	args := func(prio int) []string {
		return baseArgs(prio, "--version-vrrp", "2", "--advert-interval", "1s", "--auth-pass", "secret1", "--conflict-probe-interval", "100ms")
	}
	kp := k.start(t, kh)
	waitHolder(t, "ka", 20*time.Second, kh, m1, m2)
	p1 := startVipd(t, m1, args(100)...)
	p2 := startVipd(t, m2, args(99)...)
	all := []*netns.Host{kh, m1, m2}
	noConflict := func(step string) {
		t.Helper()
		for _, h := range []*netns.Host{m1, m2} {
			in, ok := conflictOf(h)
			if !ok || in.Conflict || in.ConflictEpisodes != 0 || conflictMetric(t, h, "vipd_vip_conflicts_total", vipA) != 0 {
				t.Fatalf("%s: %s reports a conflict: %+v", step, h.Name, in)
			}
		}
	}
	waitFor(t, 30*time.Second, "m1 and m2 follow keepalived", func() bool { return state(m1) == "BACKUP" && state(m2) == "BACKUP" })
	noConflict("keepalived master")

	kp.Signal(syscall.SIGTERM) // priority 0: m1 takes over
	waitExit(t, kp)
	waitHolder(t, "m1", 20*time.Second, all...)
	k.start(t, kh) // preempts m1, which drains with the VIP deprecated
	waitHolder(t, "ka", 30*time.Second, all...)
	waitFor(t, 20*time.Second, "m1 BACKUP", func() bool { return state(m1) == "BACKUP" })
	noConflict("keepalived preempted m1")

	// m1 takes over after the master down interval. A killed keepalived may leave the VIP
	// bound on its host, cut off the network: count the vipd hosts only.
	kh.Crash()
	waitHolder(t, "m1", 30*time.Second, m1, m2)
	p1.Signal(syscall.SIGTERM) // m1 hands over to m2 and lingers
	waitExit(t, p1)
	waitHolder(t, "m2", 30*time.Second, m1, m2)
	// Three more probe rounds past the grace window (500ms drain + 3s + 100ms).
	deadline := time.Now().Add(5 * time.Second)
	waitFor(t, 20*time.Second, "m2 settled as master", func() bool { return time.Now().After(deadline) && state(m2) == "MASTER" })
	in, ok := conflictOf(m2)
	if !ok || in.Conflict || in.ConflictEpisodes != 0 || strings.Contains(p2.Output(), "VIP conflict") {
		t.Fatalf("m2 after taking over from m1: %+v\n%s", in, p2.Output())
	}
	if strings.Contains(p1.Output(), "VIP conflict") {
		t.Fatalf("m1 logged a conflict:\n%s", p1.Output())
	}
}

// TestConflictStaticAddress: a host with the VIPs configured by hand (IPv4 and IPv6, no
// VRRP at all) is found by the ARP and NDP probes alone; with --yield-on-conflict the
// master steps down and stays BACKUP while the other holder is there, and takes the VIPs
// back once it is gone.
func TestConflictStaticAddress(t *testing.T) {
	const vip6 = "fd77:1::100"
	for _, yield := range []bool{false, true} {
		t.Run(fmt.Sprintf("yield=%v", yield), func(t *testing.T) {
			n := netns.New(t, "hc-", subnet)
			m1, rogue := n.AddHost("m1", 11), n.AddHost("x", 66)
			linkLocalReady(t, m1, rogue)
			args := baseArgs(100, "--vip", vip6+"/64", fmt.Sprintf("--yield-on-conflict=%v", yield))
			p := startVipd(t, m1, args...)
			waitFor(t, 20*time.Second, "m1 MASTER", func() bool { return state(m1) == "MASTER" && hasVIP(t, m1, vipA) })

			added := time.Now()
			rogue.Run("ip", "addr", "add", vipCIR, "dev", "eth0")
			rogue.Run("ip", "-6", "addr", "add", vip6+"/64", "dev", "eth0", "nodad")
			if !yield {
				waitFor(t, 60*time.Second, "both VIPs in conflict, seen by ARP and NDP", func() bool {
					in, ok := conflictOf(m1)
					seen := map[string]string{}
					for _, c := range in.Conflicts {
						seen[c.VIP.String()] = strings.Join(c.MACs, ",")
					}
					return ok && strings.Contains(seen[vipA], mac(t, rogue)+" (arp)") && strings.Contains(seen[vip6], mac(t, rogue)+" (ndp)")
				})
				in, _ := conflictOf(m1)
				for _, c := range in.Conflicts {
					t.Logf("%s: conflict reported %s after the other host bound it (probes every 1s)", c.VIP, c.Since.Sub(added).Round(time.Millisecond))
				}
				if in.State != "MASTER" || conflictMetric(t, m1, "vipd_vip_conflict", vipA) != 1 || conflictMetric(t, m1, "vipd_vip_conflict", vip6) != 1 {
					t.Fatalf("without --yield-on-conflict: %+v\n%s", in, fetch(t, m1, "/metrics"))
				}
			} else {
				waitFor(t, 30*time.Second, "m1 yields: BACKUP without the VIP", func() bool { return state(m1) == "BACKUP" && !hasVIP(t, m1, vipA) })
				st1, _ := conflictOf(m1)
				if st1.ConflictEpisodes == 0 || !strings.HasPrefix(st1.LastReason, "conflict: yielding") {
					t.Fatalf("m1 BACKUP, but not for the conflict: %+v", st1)
				}
				// Several hold periods (2 x 3 s) with the other holder present: m1 stays out.
				deadline := time.Now().Add(8 * time.Second)
				waitFor(t, 30*time.Second, "8 s passed", func() bool {
					if state(m1) != "BACKUP" {
						t.Fatalf("m1 took the VIP back while the other holder is there:\n%s", p.Output())
					}
					return time.Now().After(deadline)
				})
				if st2, _ := conflictOf(m1); st2.Transitions != st1.Transitions {
					t.Fatalf("m1 flapped while yielding: %d transitions, %d before", st2.Transitions, st1.Transitions)
				}
			}
			rogue.Run("ip", "addr", "del", vipCIR, "dev", "eth0")
			rogue.Run("ip", "-6", "addr", "del", vip6+"/64", "dev", "eth0")
			waitFor(t, 60*time.Second, "conflict over, m1 MASTER", func() bool {
				in, ok := conflictOf(m1)
				return ok && !in.Conflict && in.State == "MASTER" && hasVIP(t, m1, vipA)
			})
			if conflictMetric(t, m1, "vipd_vip_conflict", vipA) != 0 || conflictMetric(t, m1, "vipd_vip_conflict", vip6) != 0 {
				t.Fatalf("gauges not back to 0:\n%s", fetch(t, m1, "/metrics"))
			}
		})
	}
}
