package vip_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
)

// keepalived describes one keepalived 2.2.7 VRRP instance for interop tests.
type keepalived struct {
	version  int
	prio     int
	interval time.Duration
	authPass string
	peer     string // unicast mode: the other router's address
}

// start runs keepalived (VRRP only, foreground) inside h with its own config and pid files.
func (k keepalived) start(t *testing.T, h *netns.Host) *netns.Proc {
	t.Helper()
	testenv.RequireCommand(t, "keepalived")
	dir := t.TempDir()
	auth := ""
	if k.authPass != "" {
		auth = fmt.Sprintf("  authentication {\n    auth_type PASS\n    auth_pass %s\n  }\n", k.authPass)
	}
	if k.peer != "" {
		auth += fmt.Sprintf("  unicast_src_ip %s\n  unicast_peer {\n    %s\n  }\n", h.Addr, k.peer)
	}
	conf := fmt.Sprintf(`global_defs {
  router_id %s
}
vrrp_instance VI_1 {
  state BACKUP
  interface eth0
  virtual_router_id 51
  priority %d
  advert_int %g
  version %d
%s  virtual_ipaddress {
    %s
  }
}
`, h.Name, k.prio, k.interval.Seconds(), k.version, auth, vipCIR)
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return h.Start("keepalived", "-n", "-l", "-D", "--vrrp", "-f", path,
		"-p", filepath.Join(dir, "k.pid"), "-r", filepath.Join(dir, "v.pid"), "-c", filepath.Join(dir, "c.pid"))
}

// TestKeepalivedInterop runs vipd and keepalived in the same VRID, each side once as the
// higher priority: the right one becomes master, the other follows its adverts without
// dropping any, and takes over when the master crashes or stops.
func TestKeepalivedInterop(t *testing.T) {
	testenv.RequireCommand(t, "keepalived")
	modes := []struct {
		name    string
		k       keepalived
		args    []string
		unicast bool
	}{
		{"v3-unicast", keepalived{version: 3, interval: 100 * time.Millisecond}, []string{"--version-vrrp", "3", "--advert-interval", "100ms"}, true},
		{"v3-100ms", keepalived{version: 3, interval: 100 * time.Millisecond}, []string{"--version-vrrp", "3", "--advert-interval", "100ms"}, false},
		{"v2-1s-pass", keepalived{version: 2, interval: time.Second, authPass: "secret1"}, []string{"--version-vrrp", "2", "--advert-interval", "1s", "--auth-pass", "secret1"}, false},
	}
	for _, m := range modes {
		// Hosts: keepalived on 10.77.1.11, vipd on 10.77.1.12.
		kAddr, vAddr := subnet+".11", subnet+".12"
		vipdArgs := func(prio int) []string {
			a := baseArgs(prio)
			// baseArgs sets 100ms; the mode's own interval comes later and wins.
			a = append(a, m.args...)
			if m.unicast {
				a = append(a, "--unicast-peer", kAddr, "--unicast-src", vAddr)
			}
			return a
		}
		if m.unicast {
			m.k.peer = vAddr
		}
		t.Run(m.name+"/keepalived-master", func(t *testing.T) {
			n := netns.New(t, "hv-", subnet)
			kh, vh := n.AddHost("ka", 11), n.AddHost("vd", 12)
			k := m.k
			k.prio = 101
			k.start(t, kh)
			waitFor(t, 10*time.Second, "keepalived holds the VIP", func() bool { return hasVIP(t, kh, vipA) })
			startVipd(t, vh, vipdArgs(100)...)
			// Received counts as the socket reads; the state machine follows on its own
			// goroutine (after its start-up, on a loaded machine): wait for both.
			waitFor(t, 20*time.Second, "vipd follows keepalived's adverts", func() bool {
				st, err := getStatus(vh)
				return err == nil && st.Instances[0].AdvertsReceived >= 2 && st.Instances[0].State == "BACKUP" && st.Instances[0].MasterPriority != 0
			})
			st, _ := getStatus(vh)
			in := st.Instances[0]
			if in.State != "BACKUP" || in.MasterAddr != kh.Addr.String() || in.MasterPriority != 101 || len(in.Dropped) != 0 {
				t.Fatalf("vipd beside a keepalived master: %+v", in)
			}
			if hasVIP(t, vh, vipA) {
				t.Fatal("vipd bound the VIP while keepalived is master")
			}
			kh.Crash()
			waitFor(t, 10*time.Second, "vipd takes the VIP after keepalived crashed", func() bool {
				return hasVIP(t, vh, vipA) && state(vh) == "MASTER"
			})
		})
		t.Run(m.name+"/vipd-master", func(t *testing.T) {
			n := netns.New(t, "hv-", subnet)
			kh, vh := n.AddHost("ka", 11), n.AddHost("vd", 12)
			v := startVipd(t, vh, vipdArgs(101)...)
			waitFor(t, 10*time.Second, "vipd holds the VIP", func() bool { return hasVIP(t, vh, vipA) })
			k := m.k
			k.prio = 100
			kp := k.start(t, kh)
			waitFor(t, 10*time.Second, "keepalived enters BACKUP", func() bool {
				return strings.Contains(kp.Output(), "Entering BACKUP STATE")
			})
			// Several advert intervals with keepalived as backup: it must not take the VIP.
			deadline := time.Now().Add(4 * m.k.interval)
			for time.Now().Before(deadline) {
				if hasVIP(t, kh, vipA) {
					t.Fatalf("keepalived took the VIP from a higher-priority vipd:\n%s", kp.Output())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if out := kp.Output(); strings.Contains(out, "bad") || strings.Contains(out, "invalid") || strings.Contains(out, "mismatch") {
				t.Fatalf("keepalived complains about vipd's adverts:\n%s", out)
			}
			v.Signal(syscall.SIGTERM)
			waitFor(t, 10*time.Second, "keepalived takes the VIP after vipd's priority 0 advert", func() bool {
				return hasVIP(t, kh, vipA) && !hasVIP(t, vh, vipA)
			})
			if !strings.Contains(kp.Output(), "priority 0 advertisement") {
				t.Fatalf("keepalived did not log vipd's priority 0 advert:\n%s", kp.Output())
			}
		})
	}
}

// TestIPv6Adverts: VRRPv3 over IPv6 (ff02::12 from the link-local address) between two
// vipd, and between keepalived (master) and vipd: the same election over the other family.
func TestIPv6Adverts(t *testing.T) {
	const vip6 = "fd77:1::100"
	setup := func(t *testing.T) (*netns.Host, *netns.Host) {
		n := netns.New(t, "hv-", subnet)
		a, b := n.AddHost("m1", 11), n.AddHost("m2", 12)
		linkLocalReady(t, a, b)
		return a, b
	}
	has6 := func(h *netns.Host) bool {
		out, _ := h.Exec("ip", "-6", "-o", "addr", "show", "dev", "eth0")
		return strings.Contains(out, " "+vip6+"/64")
	}
	args := func(prio int) []string {
		return []string{"--iface", "eth0", "--vip", vip6 + "/64", "--vrid", "51", "--priority", fmt.Sprint(prio),
			"--advert-interval", "100ms", "--check-url", "", "--status-addr", status}
	}
	t.Run("vipd-vipd", func(t *testing.T) {
		m1, m2 := setup(t)
		startVipd(t, m1, args(101)...)
		startVipd(t, m2, args(100)...)
		waitFor(t, 10*time.Second, "IPv6 VIP on m1 only, m2 BACKUP", func() bool {
			return has6(m1) && !has6(m2) && state(m2) == "BACKUP"
		})
		st, _ := getStatus(m2)
		if in := st.Instances[0]; !strings.HasPrefix(in.MasterAddr, "fe80::") || in.AdvertsReceived == 0 || len(in.Dropped) != 0 {
			t.Fatalf("m2 following m1 over IPv6: %+v", in)
		}
		m1.Crash()
		waitFor(t, 20*time.Second, "IPv6 VIP on m2", func() bool { return has6(m2) && state(m2) == "MASTER" })
	})
	startKeepalived6 := func(t *testing.T, h *netns.Host, prio int) *netns.Proc {
		testenv.RequireCommand(t, "keepalived")
		dir := t.TempDir()
		conf := filepath.Join(dir, "keepalived.conf")
		body := fmt.Sprintf("vrrp_instance VI_6 {\n  state BACKUP\n  interface eth0\n  virtual_router_id 51\n  priority %d\n  advert_int 0.1\n  version 3\n  virtual_ipaddress {\n    %s/64\n  }\n}\n", prio, vip6)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return h.Start("keepalived", "-n", "-l", "-D", "--vrrp", "-f", conf,
			"-p", filepath.Join(dir, "k.pid"), "-r", filepath.Join(dir, "v.pid"), "-c", filepath.Join(dir, "c.pid"))
	}
	t.Run("vipd-master", func(t *testing.T) {
		m1, m2 := setup(t)
		v := startVipd(t, m1, args(101)...)
		waitFor(t, 10*time.Second, "vipd holds the IPv6 VIP", func() bool { return has6(m1) })
		kp := startKeepalived6(t, m2, 100)
		waitFor(t, 10*time.Second, "keepalived enters BACKUP", func() bool { return strings.Contains(kp.Output(), "Entering BACKUP STATE") })
		deadline := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if has6(m2) {
				t.Fatalf("keepalived took the IPv6 VIP from a higher-priority vipd:\n%s", kp.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
		v.Signal(syscall.SIGTERM)
		waitFor(t, 20*time.Second, "keepalived takes the IPv6 VIP after vipd's priority 0 advert", func() bool { return has6(m2) && !has6(m1) })
		if !strings.Contains(kp.Output(), "priority 0 advertisement") {
			t.Fatalf("keepalived did not log vipd's priority 0 advert:\n%s", kp.Output())
		}
	})
	t.Run("keepalived-master", func(t *testing.T) {
		m1, m2 := setup(t)
		startKeepalived6(t, m1, 101)
		waitFor(t, 10*time.Second, "keepalived holds the IPv6 VIP", func() bool { return has6(m1) })
		startVipd(t, m2, args(100)...)
		waitFor(t, 20*time.Second, "vipd follows keepalived over IPv6", func() bool {
			st, err := getStatus(m2)
			return err == nil && st.Instances[0].AdvertsReceived >= 2
		})
		st, _ := getStatus(m2)
		if in := st.Instances[0]; in.State != "BACKUP" || in.MasterPriority != 101 || len(in.Dropped) != 0 || has6(m2) {
			t.Fatalf("vipd beside keepalived over IPv6: %+v", in)
		}
		m1.Crash()
		waitFor(t, 20*time.Second, "vipd takes the IPv6 VIP", func() bool { return has6(m2) && state(m2) == "MASTER" })
	})
}
