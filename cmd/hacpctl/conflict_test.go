package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/pkg/ctl"
	"github.com/hacp/hacp/pkg/vrrp"
)

// startGuideKeepalived runs keepalived (VRRP only, foreground) in h with the vrrp_instance of
// the kubeadm HA guide: VRRPv2 (keepalived's default version), advert_int 1 (its default),
// PASS authentication with password pass, in the masters' VRID and with their VIP.
func startGuideKeepalived(t *testing.T, h *netns.Host, pass string) *netns.Proc {
	t.Helper()
	testenv.RequireCommand(t, "keepalived")
	dir := t.TempDir()
	conf := fmt.Sprintf(`global_defs {
  router_id %s
}
vrrp_instance VI_1 {
  state BACKUP
  interface eth0
  virtual_router_id 58
  priority 100
  authentication {
    auth_type PASS
    auth_pass %s
  }
  virtual_ipaddress {
    %s
  }
}
`, h.Name, pass, ctlVIP)
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return h.Start("keepalived", "-n", "-l", "-D", "--vrrp", "-f", path,
		"-p", filepath.Join(dir, "k.pid"), "-r", filepath.Join(dir, "v.pid"), "-c", filepath.Join(dir, "c.pid"))
}

// waitStatus runs hacpctl status -o json in h until cond holds of its exit code and report,
// and fails the test with the last answer if it does not within timeout.
func waitStatus(t *testing.T, h *netns.Host, file, what string, timeout time.Duration, cond func(code int, r *ctl.Report) bool) (*ctl.Report, string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		stdout, stderr, code := hacpctl(t, h, "status", "--config", file, "-o", "json")
		r := new(ctl.Report)
		if err := json.Unmarshal([]byte(stdout), r); err == nil && cond(code, r) {
			return r, stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("hacpctl status: not %s within %s: exit %d, %s\n%s", what, timeout, code, stderr, stdout)
		}
		time.Sleep(200 * time.Millisecond) // polling hacpctl, not synchronising
	}
}

// heldByM1 reports whether r is healthy (exit 0) with m1 as the one holder of the VIP and no
// conflict on any master.
func heldByM1(code int, r *ctl.Report) bool {
	if code != 0 || !r.Healthy || len(r.VIPs) != 1 || !slices.Equal(r.VIPs[0].Holders, []string{"m1"}) {
		return false
	}
	for _, m := range r.Masters {
		if m.Vipd == nil || len(m.Vipd.Conflicts) > 0 {
			return false
		}
	}
	return true
}

// vipdConflicts reads the conflicts of the first instance in the /status of h's vipd.
func vipdConflicts(h *netns.Host) []vrrp.VIPConflict {
	var st struct {
		Instances []struct {
			Conflicts []vrrp.VIPConflict `json:"conflicts"`
		} `json:"instances"`
	}
	if err := h.GetJSON("127.0.0.1:9901", "/status", 2*time.Second, &st); err != nil || len(st.Instances) == 0 {
		return nil
	}
	return st.Instances[0].Conflicts
}

// TestStatusVIPConflict: a keepalived with the kubeadm guide's configuration joins the
// masters' VRID with a VRRP setting vipd does not accept, so each side drops the other's
// adverts and both hold the VIP. hacpctl status, which sees only m1 holding it, reports
// vipd's conflict (exit 1, m1's vipd named first); once keepalived has stopped, it is
// healthy again. The mismatches are the two an operator most likely makes: the guide's
// keepalived (VRRPv2) beside vipd's default VRRPv3, and a VRRPv2 password that differs. In
// the first, keepalived as MASTER sends one advert and then none while it hears vipd's every
// 100 ms, so vipd's ARP probes are what find it.
func TestStatusVIPConflict(t *testing.T) {
	testenv.RequireCommand(t, "keepalived")
	cases := []struct {
		name     string
		vipdArgs []string
		reason   string // why vipd drops keepalived's adverts
	}{
		{"guide keepalived beside VRRPv3", nil, vrrp.DropVersion},
		{"VRRPv2 password mismatch", []string{"--version-vrrp", "2", "--advert-interval", "1s", "--auth-pass", "hacp42"}, vrrp.DropAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, tc.vipdArgs...)
			ka := c.net.AddHost("ka", 3)
			waitStatus(t, c.m1, c.config, "healthy with m1 holding the VIP", 2*time.Minute, heldByM1)

			kp := startGuideKeepalived(t, ka, "other42")
			started := time.Now()
			r, stderr := waitStatus(t, c.m1, c.config, "degraded by m1's VIP conflict", time.Minute, func(code int, r *ctl.Report) bool {
				return code == 1 && !r.Healthy && len(r.Problems) > 0 && r.Problems[0].Master == "m1" && r.Problems[0].Component == "vipd"
			})
			t.Logf("hacpctl status reported the conflict %s after keepalived started (keepalived's adverts every 1s, vipd's probes every 1s)", time.Since(started).Round(100*time.Millisecond))
			checkConflictReport(t, c, ka, r, stderr, tc.reason)

			kp.Signal(syscall.SIGTERM)
			<-kp.Done()
			r, _ = waitStatus(t, c.m1, c.config, "healthy again with keepalived stopped", time.Minute, heldByM1)
			if len(r.Problems) != 0 {
				t.Fatalf("healthy with problems: %+v", r.Problems)
			}
			if out, _ := ka.Exec("ip", "-o", "addr", "show", "dev", "eth0"); strings.Contains(out, " "+ctlVIP+"/") {
				t.Fatalf("keepalived stopped, but its host still has the VIP: %s", out)
			}
		})
	}
}

// checkConflictReport checks hacpctl's degraded report r (and its stderr line) against the
// world: keepalived and m1 both hold the VIP, hacpctl sees m1 only, m1's vipd reports the
// conflict in vipd_vip_conflict, and its /status names keepalived's host and why its adverts
// are dropped.
func checkConflictReport(t *testing.T, c *ctlCluster, ka *netns.Host, r *ctl.Report, stderr, reason string) {
	t.Helper()
	if out, _ := ka.Exec("ip", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, " "+ctlVIP+"/") {
		t.Fatalf("conflict reported, but keepalived does not hold the VIP: %s", out)
	}
	if len(r.VIPs) != 1 || !slices.Equal(r.VIPs[0].Holders, []string{"m1"}) {
		t.Fatalf("VIPs %+v: want held by m1 alone (hacpctl does not see keepalived)", r.VIPs)
	}
	want := "instance=vrid58 vip=" + ctlVIP
	if v := r.Masters[0].Vipd; v == nil || !slices.Equal(v.Conflicts, []string{want}) {
		t.Fatalf("m1's vipd: %+v, want conflicts [%s]", r.Masters[0].Vipd, want)
	}
	p := r.Problems[0]
	line := "hacpctl status: DEGRADED: " + r.Reason() + "\n"
	if p.Master != "m1" || !strings.HasPrefix(p.Message, "VIP conflict (vipd_vip_conflict "+want+")") || stderr != line {
		t.Fatalf("first problem %+v, stderr %q: want m1's VIP conflict on one line", p, stderr)
	}
	for _, q := range r.Problems[1:] {
		if q.Component != "vipd" || !strings.HasPrefix(q.Message, "VIP conflict ") {
			t.Fatalf("a problem other than a VIP conflict: %+v", q)
		}
	}
	t.Logf("hacpctl status -o json problems: %+v", r.Problems)

	// vipd's /status says who the other holder is: keepalived's adverts, dropped for reason,
	// or keepalived's MAC answering the ARP probes for the VIP.
	var ifi *net.Interface
	if err := ka.Do(func() (err error) { ifi, err = net.InterfaceByName("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	sender, mac := ka.Addr.String()+" ("+reason+")", ifi.HardwareAddr.String()+" (arp)"
	cs := vipdConflicts(c.m1)
	if len(cs) != 1 || (!slices.Contains(cs[0].Senders, sender) && !slices.Contains(cs[0].MACs, mac)) {
		t.Fatalf("m1's vipd /status conflicts %+v: want keepalived named as %q or %q", cs, sender, mac)
	}
	t.Logf("m1's vipd /status: %+v", cs[0])
}
