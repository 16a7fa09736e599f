package vip_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/pkg/vip"
	"github.com/hacp/hacp/pkg/vrrp"
)

const (
	subnet = "10.77.1"
	vipA   = "10.77.1.100"
	vipCIR = vipA + "/24"
	status = "127.0.0.1:9901" // every host is its own namespace, so the port never clashes
)

var vipdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hv-vipd-")
	if err != nil {
		panic(err)
	}
	vipdBin = filepath.Join(dir, "vipd")
	if os.Geteuid() == 0 {
		args := []string{"build", "-o", vipdBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "github.com/hacp/hacp/cmd/vipd")...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			os.RemoveAll(dir)
			panic("build vipd: " + err.Error())
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// baseArgs are the flags every test vipd shares: VRRPv3 at 100 ms, no health check.
func baseArgs(prio int, extra ...string) []string {
	return append([]string{"--iface", "eth0", "--vip", vipCIR, "--vrid", "51", "--priority", fmt.Sprint(prio),
		"--advert-interval", "100ms", "--check-url", "", "--status-addr", status, "--log-level", "debug"}, extra...)
}

func startVipd(t *testing.T, h *netns.Host, args ...string) *netns.Proc {
	t.Helper()
	p := h.Start(vipdBin, args...)
	t.Cleanup(func() {
		if strings.Contains(p.Output(), "DATA RACE") {
			t.Errorf("%s: vipd reported a data race:\n%s", h.Name, p.Output())
		}
	})
	waitFor(t, 10*time.Second, h.Name+" vipd status server up", func() bool {
		_, err := getStatus(h)
		return err == nil
	})
	return p
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getStatus fetches /status from inside the host's namespace.
func getStatus(h *netns.Host) (*vip.Status, error) {
	var st vip.Status
	if err := h.GetJSON(status, "/status", 2*time.Second, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func state(h *netns.Host) string {
	st, err := getStatus(h)
	if err != nil || len(st.Instances) == 0 {
		return "DOWN"
	}
	return st.Instances[0].State
}

// hasVIP reports whether addr is bound on the host's eth0.
func hasVIP(t *testing.T, h *netns.Host, addr string) bool {
	t.Helper()
	out, err := h.Exec("ip", "-4", "-o", "addr", "show", "dev", "eth0")
	if err != nil {
		return false
	}
	return strings.Contains(out, " "+addr+"/")
}

// holders lists the hosts that have the VIP bound.
func holders(t *testing.T, hosts ...*netns.Host) []string {
	t.Helper()
	var out []string
	for _, h := range hosts {
		if hasVIP(t, h, vipA) {
			out = append(out, h.Name)
		}
	}
	return out
}

func waitHolder(t *testing.T, want string, timeout time.Duration, hosts ...*netns.Host) {
	t.Helper()
	waitFor(t, timeout, "VIP held by exactly "+want, func() bool {
		got := holders(t, hosts...)
		return len(got) == 1 && got[0] == want
	})
}

func mac(t *testing.T, h *netns.Host) string {
	t.Helper()
	out := h.Run("ip", "-o", "link", "show", "dev", "eth0")
	m := etherRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s: no MAC address in %q", h.Name, out)
	}
	return m[1]
}

var (
	lladdrRe = regexp.MustCompile(`lladdr ([0-9a-f:]+)`)
	etherRe  = regexp.MustCompile(`link/ether ([0-9a-f:]+)`)
)

// neighbour returns the MAC address the host's ARP table holds for ip, or "".
func neighbour(h *netns.Host, ip string) string {
	out, _ := h.Exec("ip", "neigh", "show", ip, "dev", "eth0")
	if m := lladdrRe.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// ping checks that ip answers from inside h: a TCP connect to a closed port is refused by
// the host that holds the address (there is no ping binary on the test machines).
func ping(h *netns.Host, ip string) bool {
	err := h.Do(func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "9"), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	return err == nil || errors.Is(err, syscall.ECONNREFUSED)
}

// TestThreeMasters: three vipd at priorities 101/100/99 elect exactly one master; a crashed
// master is replaced by the next and a gratuitous ARP repoints a third host's neighbour
// entry; the old master returns and preempts; SIGTERM hands over.
func TestThreeMasters(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2, m3 := n.AddHost("m1", 11), n.AddHost("m2", 12), n.AddHost("m3", 13)
	client := n.AddHost("c", 50)
	p1 := startVipd(t, m1, baseArgs(101)...)
	startVipd(t, m2, baseArgs(100)...)
	startVipd(t, m3, baseArgs(99)...)

	waitHolder(t, "m1", 10*time.Second, m1, m2, m3)
	waitFor(t, 20*time.Second, "m1 MASTER, m2 and m3 BACKUP", func() bool {
		return state(m1) == "MASTER" && state(m2) == "BACKUP" && state(m3) == "BACKUP"
	})
	if !ping(client, vipA) {
		t.Fatal("client cannot ping the VIP on m1")
	}
	if got := neighbour(client, vipA); got != mac(t, m1) {
		t.Fatalf("client neighbour entry for VIP = %q, want m1's %s", got, mac(t, m1))
	}

	t.Run("crash master", func(t *testing.T) {
		m1.Crash()
		waitHolder(t, "m2", 20*time.Second, m2, m3)
		// No traffic from the client: only m2's gratuitous ARP can change its entry.
		waitFor(t, 20*time.Second, "client neighbour entry repointed to m2 by GARP", func() bool {
			return neighbour(client, vipA) == mac(t, m2)
		})
		if !ping(client, vipA) {
			t.Fatal("client cannot ping the VIP after failover")
		}
		if state(m3) != "BACKUP" {
			t.Fatalf("m3 is %s, want BACKUP", state(m3))
		}
	})

	t.Run("old master returns and preempts", func(t *testing.T) {
		m1.SetLink(true)
		// The crashed vipd's VIP expires by its netlink lifetime; the new one removes it anyway.
		p1 = startVipd(t, m1, baseArgs(101)...)
		waitHolder(t, "m1", 20*time.Second, m1, m2, m3)
		waitFor(t, 20*time.Second, "m2 back to BACKUP", func() bool { return state(m2) == "BACKUP" })
		waitFor(t, 20*time.Second, "client neighbour entry back on m1", func() bool { return neighbour(client, vipA) == mac(t, m1) })
	})

	t.Run("sigterm hands over", func(t *testing.T) {
		st, err := getStatus(m2)
		if err != nil {
			t.Fatal(err)
		}
		before := st.Instances[0].Transitions
		p1.Signal(syscall.SIGTERM)
		waitExit(t, p1)
		if hasVIP(t, m1, vipA) {
			t.Fatal("m1 still holds the VIP after vipd exited on SIGTERM")
		}
		waitHolder(t, "m2", 20*time.Second, m1, m2, m3)
		st, _ = getStatus(m2)
		if st.Instances[0].Transitions != before+1 || st.Instances[0].State != "MASTER" {
			t.Fatalf("m2 status after handover: %+v", st.Instances[0])
		}
		if state(m3) != "BACKUP" {
			t.Fatalf("m3 is %s, want BACKUP", state(m3))
		}
	})
}

// waitExit waits until the process is gone (reaped by netns's waiter).
func waitExit(t *testing.T, p *netns.Proc) {
	t.Helper()
	waitFor(t, 20*time.Second, "process exit", func() bool {
		return syscall.Kill(p.Cmd.Process.Pid, 0) != nil
	})
}

// TestHealthCheckMovesVIP: the master's health check target (a TCP listener standing in
// for the local apiserver) dies; its priority drops by the weight and the VIP moves. With
// --check-action fault the master gives up at once with a priority 0 advert.
func TestHealthCheckMovesVIP(t *testing.T) {
	for _, action := range []string{"weight", "fault", "exec"} {
		t.Run(action, func(t *testing.T) {
			n := netns.New(t, "hv-", subnet)
			m1, m2 := n.AddHost("m1", 11), n.AddHost("m2", 12)
			var target net.Listener
			if err := m1.Do(func() (err error) { target, err = net.Listen("tcp", "127.0.0.1:6443"); return err }); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { target.Close() })
			go func() {
				for {
					c, err := target.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			check := []string{"--check-url", "tcp://127.0.0.1:6443", "--check-interval", "100ms", "--check-timeout", "100ms",
				"--check-fall", "2", "--check-rise", "2", "--check-action", action}
			marker := filepath.Join(t.TempDir(), "healthy")
			if action == "exec" {
				// The exec check alone: healthy while the marker file exists.
				if err := os.WriteFile(marker, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				check = []string{"--check-url", "", "--check-exec", "test -e " + marker, "--check-interval", "100ms",
					"--check-timeout", "1s", "--check-fall", "2", "--check-action", "weight"}
			}
			startVipd(t, m1, append(baseArgs(101), check...)...)
			// m2 has no check target, but its check is off: it stays at 100.
			startVipd(t, m2, baseArgs(100)...)
			waitHolder(t, "m1", 10*time.Second, m1, m2)

			target.Close()
			os.Remove(marker)
			waitHolder(t, "m2", 20*time.Second, m1, m2)
			st, err := getStatus(m1)
			if err != nil {
				t.Fatal(err)
			}
			in := st.Instances[0]
			switch action {
			case "weight", "exec":
				if in.State != "BACKUP" || in.EffectivePriority != 51 || st.Healthy {
					t.Fatalf("m1 after its check failed: healthy=%v %+v", st.Healthy, in)
				}
			case "fault":
				if in.State != "FAULT" || st.Healthy {
					t.Fatalf("m1 after its check failed: healthy=%v %+v", st.Healthy, in)
				}
			}
		})
	}
}

// TestUnicastWithMulticastBlocked: with 224.0.0.18 dropped by iptables on every host, the
// unicast peers still elect one master and fail over; adverts from a host that is not a
// listed peer are dropped and counted.
func TestUnicastWithMulticastBlocked(t *testing.T) {
	testenv.RequireCommand(t, "iptables")
	n := netns.New(t, "hv-", subnet)
	hosts := []*netns.Host{n.AddHost("m1", 11), n.AddHost("m2", 12), n.AddHost("m3", 13)}
	for _, h := range hosts {
		h.Run("iptables", "-A", "INPUT", "-d", "224.0.0.18", "-j", "DROP")
		h.Run("iptables", "-A", "OUTPUT", "-d", "224.0.0.18", "-j", "DROP")
	}
	peers := func(self int) []string {
		var args []string
		for i, h := range hosts[:2] {
			if i != self {
				args = append(args, "--unicast-peer", h.Addr.String())
			}
		}
		return append(args, "--unicast-src", hosts[self].Addr.String())
	}
	startVipd(t, hosts[0], append(baseArgs(101), peers(0)...)...)
	startVipd(t, hosts[1], append(baseArgs(100), peers(1)...)...)
	waitHolder(t, "m1", 10*time.Second, hosts[:2]...)
	// m3 is not a listed peer: its higher-priority adverts must be ignored by m1 and m2.
	startVipd(t, hosts[2], append(baseArgs(200), "--unicast-peer", hosts[0].Addr.String(), "--unicast-peer", hosts[1].Addr.String())...)
	waitFor(t, 20*time.Second, "m1 drops m3's adverts as not a peer", func() bool {
		st, err := getStatus(hosts[0])
		return err == nil && st.Instances[0].Dropped["peer"] > 3
	})
	if state(hosts[0]) != "MASTER" || state(hosts[1]) != "BACKUP" {
		t.Fatalf("with a stranger's adverts: m1 %s, m2 %s; want MASTER, BACKUP", state(hosts[0]), state(hosts[1]))
	}
	hosts[0].Crash()
	waitHolder(t, "m2", 20*time.Second, hosts[1])
	if st, _ := getStatus(hosts[1]); st.Instances[0].Dropped["peer"] == 0 {
		t.Fatalf("m2 did not count m3's adverts as dropped: %+v", st.Instances[0].Dropped)
	}
}

// TestConfigInstancesReloadNotify runs two instances from a config file on two hosts,
// checks /metrics and the notify hook, then raises m2's priority in its file and sends
// SIGHUP: m2 preempts in the changed instance only.
func TestConfigInstancesReloadNotify(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2 := n.AddHost("m1", 11), n.AddHost("m2", 12)
	dir := t.TempDir()
	notifyOut := filepath.Join(dir, "notify.log")
	script := filepath.Join(dir, "notify.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> "+notifyOut+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := func(prioB int) string {
		return fmt.Sprintf(`iface: eth0
advert-interval: 100ms
check-url: ""
status-addr: %s
instances:
  - name: a
    vrid: 51
    vip: [10.77.1.100/24]
  - name: b
    vrid: 52
    vip: [10.77.1.101/24, 10.77.1.102/24]
    priority: %d
`, status, prioB)
	}
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c1, c2 := filepath.Join(dir, "m1.yaml"), filepath.Join(dir, "m2.yaml")
	write(c1, conf(150))
	write(c2, conf(100))
	startVipd(t, m1, "--config", c1, "--priority", "101", "--notify", script)
	p2 := startVipd(t, m2, "--config", c2, "--priority", "100")
	for _, a := range []string{"10.77.1.100", "10.77.1.101", "10.77.1.102"} {
		waitFor(t, 10*time.Second, a+" on m1 only", func() bool { return hasVIP(t, m1, a) && !hasVIP(t, m2, a) })
	}
	waitFor(t, 20*time.Second, "notify ran for both instances", func() bool {
		data, _ := os.ReadFile(notifyOut)
		return strings.Contains(string(data), "INSTANCE a MASTER 101") && strings.Contains(string(data), "INSTANCE b MASTER 150")
	})
	metrics := fetch(t, m1, "/metrics")
	for _, want := range []string{`vipd_state{instance="a"} 2`, `vipd_adverts_sent_total{instance="b"}`, `vipd_priority{instance="b"} 150`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
		}
	}

	write(c2, conf(200))
	p2.Signal(syscall.SIGHUP)
	waitFor(t, 20*time.Second, "m2 takes instance b after reload", func() bool {
		return hasVIP(t, m2, "10.77.1.101") && !hasVIP(t, m1, "10.77.1.101")
	})
	if !hasVIP(t, m1, vipA) || hasVIP(t, m2, vipA) {
		t.Fatal("instance a moved although its settings did not change")
	}
	// A broken file on reload keeps the running configuration.
	write(c2, "instances: [{vrid: 999}]\n")
	p2.Signal(syscall.SIGHUP)
	waitFor(t, 20*time.Second, "reload error logged", func() bool { return strings.Contains(p2.Output(), "reload failed") })
	if state(m2) == "DOWN" || !hasVIP(t, m2, "10.77.1.101") {
		t.Fatal("m2 lost its instance after a bad reload")
	}
}

func fetch(t *testing.T, h *netns.Host, path string) string {
	t.Helper()
	body, err := h.Get(status, path, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestKilledVipdLeavesNoVIP: a vipd killed without warning (no SIGTERM, no priority 0) does
// not leave its VIP behind for good: the address expires by its netlink valid lifetime.
func TestKilledVipdLeavesNoVIP(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1 := n.AddHost("m1", 11)
	p := startVipd(t, m1, baseArgs(101, "--vip-lifetime", "2s", "--label", "eth0:vip")...)
	waitHolder(t, "m1", 10*time.Second, m1)
	out := m1.Run("ip", "-4", "addr", "show", "dev", "eth0")
	if !regexp.MustCompile(`valid_lft [0-2]sec`).MatchString(out) {
		t.Fatalf("VIP has no short valid lifetime:\n%s", out)
	}
	if !strings.Contains(out, "eth0:vip") {
		t.Fatalf("VIP lacks its label eth0:vip:\n%s", out)
	}
	// A SIGKILLed vipd removes nothing: only the lifetime it set can make the VIP go. (Whether
	// the VIP is still there right after the kill depends on how loaded the machine is.)
	p.Signal(syscall.SIGKILL)
	waitExit(t, p)
	waitFor(t, 20*time.Second, "VIP expires after vipd was killed", func() bool { return !hasVIP(t, m1, vipA) })
}

// TestStoppedBackupStaysBackup: a backup that was not run for longer than its master-down
// interval (SIGSTOP, as a starved process on a loaded host) reads the live master's adverts
// that queued on its socket meanwhile when it runs again, rather than taking over on its
// expired timer: no transition on either host, ten times over.
func TestStoppedBackupStaysBackup(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2 := n.AddHost("m1", 11), n.AddHost("m2", 12)
	startVipd(t, m1, baseArgs(101)...)
	p2 := startVipd(t, m2, baseArgs(100)...)
	waitFor(t, 20*time.Second, "m1 MASTER, m2 BACKUP", func() bool { return state(m1) == "MASTER" && state(m2) == "BACKUP" })
	inst := func(h *netns.Host) vip.InstanceStatus {
		t.Helper()
		st, err := getStatus(h)
		if err != nil {
			t.Fatal(err)
		}
		return st.Instances[0]
	}
	first1, first2 := inst(m1), inst(m2)
	for i := range 10 {
		sent, got := inst(m1).AdvertsSent, inst(m2).AdvertsReceived
		p2.Signal(syscall.SIGSTOP)
		// m2's master-down interval is 3 × 100 ms plus its skew: stop it for 8 intervals.
		waitFor(t, 20*time.Second, "m1 sends 8 adverts while m2 is stopped", func() bool { return inst(m1).AdvertsSent >= sent+8 })
		p2.Signal(syscall.SIGCONT)
		queued := inst(m1).AdvertsSent - sent
		waitFor(t, 20*time.Second, "m2 reads the queued adverts and new ones", func() bool {
			return inst(m2).AdvertsReceived >= got+queued+2
		})
		if a, b := inst(m1), inst(m2); a.Transitions != first1.Transitions || b.Transitions != first2.Transitions || b.State != "BACKUP" {
			t.Fatalf("round %d: after m2 ran again: m1 %s (%d transitions, %d before), m2 %s (%d transitions, %d before; last: %s)",
				i, a.State, a.Transitions, first1.Transitions, b.State, b.Transitions, first2.Transitions, b.LastReason)
		}
	}
}

// TestHostileAdverts: garbage, a TTL-64 advert, a bad checksum, a wrong VRID and a v2
// advert in a v3 group are dropped and counted by reason; the master keeps its VIP.
func TestHostileAdverts(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, evil := n.AddHost("m1", 11), n.AddHost("x", 66)
	startVipd(t, m1, baseArgs(100)...)
	waitHolder(t, "m1", 10*time.Second, m1)

	src := evil.Addr
	good := func(mod func(*vrrp.Packet)) []byte {
		p := &vrrp.Packet{Version: 3, Type: vrrp.TypeAdvertisement, VRID: 51, Priority: 254, MaxAdvertInt: 10,
			Addrs: []netip.Addr{netip.MustParseAddr(vipA)}}
		if mod != nil {
			mod(p)
		}
		b, err := vrrp.Encode(p, src, vrrp.MulticastGroupV4, vrrp.ChecksumPseudoHeader)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	badSum := good(nil)
	badSum[7] ^= 0xff
	sends := []struct {
		ttl     int
		payload []byte
	}{
		{255, []byte{0xde, 0xad}},
		{255, []byte{0x31, 51, 254, 9, 0, 10, 0, 0}},
		{64, good(nil)},
		{255, badSum},
		{255, good(func(p *vrrp.Packet) { p.VRID = 52 })},
		{255, func() []byte {
			p := &vrrp.Packet{Version: 2, Type: 1, VRID: 51, Priority: 254, MaxAdvertInt: 1, Addrs: []netip.Addr{netip.MustParseAddr(vipA)}}
			b, _ := vrrp.Encode(p, src, vrrp.MulticastGroupV4, vrrp.ChecksumPseudoHeader)
			return b
		}()},
	}
	err := evil.Do(func() error {
		c, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		defer c.Close()
		rc, err := ipv4.NewRawConn(c)
		if err != nil {
			return err
		}
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		if err := rc.SetMulticastInterface(ifi); err != nil {
			return err
		}
		for range 3 {
			for _, s := range sends {
				h := &ipv4.Header{Version: 4, Len: 20, TotalLen: 20 + len(s.payload), TTL: s.ttl, Protocol: 112,
					Src: src.AsSlice(), Dst: vrrp.MulticastGroupV4.AsSlice()}
				if err := rc.WriteTo(h, s.payload, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{vrrp.DropMalformed, vrrp.DropTTL, vrrp.DropChecksum, vrrp.DropVRID, vrrp.DropVersion}
	waitFor(t, 20*time.Second, "every hostile packet counted", func() bool {
		st, err := getStatus(m1)
		if err != nil {
			return false
		}
		for _, r := range want {
			if st.Instances[0].Dropped[r] == 0 {
				return false
			}
		}
		return true
	})
	st, _ := getStatus(m1)
	if in := st.Instances[0]; in.State != "MASTER" || in.AdvertsReceived != 0 || !hasVIP(t, m1, vipA) {
		t.Fatalf("after hostile adverts: %+v", in)
	}
	if !strings.Contains(fetch(t, m1, "/metrics"), `vipd_adverts_dropped_total{instance="vrid51",reason="checksum"} 3`) {
		t.Fatal("/metrics does not count the bad checksums")
	}
}

// TestIPv6VIPAnnounced: an IPv6 VIP next to the IPv4 one moves with it, and the new
// master's unsolicited neighbour advertisement (Override) repoints the client's entry.
func TestIPv6VIPAnnounced(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2, client := n.AddHost("m1", 11), n.AddHost("m2", 12), n.AddHost("c", 50)
	const vip6 = "fd77:1::100"
	for i, h := range []*netns.Host{m1, m2, client} {
		h.Run("sysctl", "-q", "-w", "net.ipv6.conf.eth0.accept_dad=0")
		h.Run("ip", "-6", "addr", "add", fmt.Sprintf("fd77:1::%d/64", []int{11, 12, 50}[i]), "dev", "eth0", "nodad")
	}
	// The NDP socket needs a usable link-local address.
	for _, h := range []*netns.Host{m1, m2} {
		waitFor(t, 10*time.Second, h.Name+" link-local address ready", func() bool {
			out, _ := h.Exec("ip", "-6", "addr", "show", "dev", "eth0", "scope", "link")
			return strings.Contains(out, "fe80::") && !strings.Contains(out, "tentative")
		})
	}
	args := func(prio int) []string { return baseArgs(prio, "--vip", vipCIR, "--vip", vip6+"/64") }
	startVipd(t, m1, args(101)...)
	startVipd(t, m2, args(100)...)
	has6 := func(h *netns.Host) bool {
		out, _ := h.Exec("ip", "-6", "-o", "addr", "show", "dev", "eth0")
		return strings.Contains(out, " "+vip6+"/64")
	}
	waitFor(t, 10*time.Second, "IPv6 VIP on m1 only", func() bool { return has6(m1) && !has6(m2) })
	if !ping(client, vip6) {
		t.Fatal("client cannot reach the IPv6 VIP")
	}
	if got := neighbour(client, vip6); got != mac(t, m1) {
		t.Fatalf("client neighbour entry for %s = %q, want m1's %s", vip6, got, mac(t, m1))
	}
	m1.Crash()
	waitFor(t, 20*time.Second, "IPv6 VIP on m2", func() bool { return has6(m2) })
	waitFor(t, 20*time.Second, "client IPv6 neighbour entry repointed to m2 by unsolicited NA", func() bool {
		return neighbour(client, vip6) == mac(t, m2)
	})
}

// TestLinkDownFault: the master's link loses carrier: it goes to FAULT and drops the VIP,
// the backup takes over; with the link back it returns through BACKUP and preempts.
func TestLinkDownFault(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2 := n.AddHost("m1", 11), n.AddHost("m2", 12)
	startVipd(t, m1, baseArgs(101)...)
	startVipd(t, m2, baseArgs(100)...)
	waitHolder(t, "m1", 10*time.Second, m1, m2)
	m1.SetLink(false)
	waitFor(t, 20*time.Second, "m1 FAULT without the VIP, m2 holds it", func() bool {
		return state(m1) == "FAULT" && !hasVIP(t, m1, vipA) && hasVIP(t, m2, vipA)
	})
	st, _ := getStatus(m1)
	if !strings.Contains(st.Instances[0].Fault, "eth0") {
		t.Fatalf("fault reason %q does not name the link", st.Instances[0].Fault)
	}
	m1.SetLink(true)
	waitHolder(t, "m1", 20*time.Second, m1, m2)
	if state(m2) != "BACKUP" {
		t.Fatalf("m2 is %s after m1 came back, want BACKUP", state(m2))
	}
}

// TestStartWithLinkDown: a vipd started while its link has no carrier (a master coming
// back before its network) is FAULT, and leaves FAULT when the carrier appears.
func TestStartWithLinkDown(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2 := n.AddHost("m1", 11), n.AddHost("m2", 12)
	startVipd(t, m2, baseArgs(100)...)
	waitHolder(t, "m2", 10*time.Second, m1, m2)
	m1.SetLink(false)
	startVipd(t, m1, baseArgs(101)...)
	waitFor(t, 20*time.Second, "m1 FAULT while its link is down", func() bool { return state(m1) == "FAULT" })
	m1.SetLink(true)
	waitHolder(t, "m1", 20*time.Second, m1, m2)
}

// TestNoPreempt: with --nopreempt a returning higher-priority router stays BACKUP.
func TestNoPreempt(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1, m2 := n.AddHost("m1", 11), n.AddHost("m2", 12)
	startVipd(t, m2, baseArgs(100, "--nopreempt")...)
	waitHolder(t, "m2", 10*time.Second, m1, m2)
	startVipd(t, m1, baseArgs(101, "--nopreempt")...)
	waitFor(t, 20*time.Second, "m1 follows m2's adverts", func() bool {
		st, err := getStatus(m1)
		return err == nil && st.Instances[0].State == "BACKUP" && st.Instances[0].AdvertsReceived >= 10
	})
	if got := holders(t, m1, m2); len(got) != 1 || got[0] != "m2" {
		t.Fatalf("VIP holders %v, want [m2]: --nopreempt must not take the VIP back", got)
	}
}

// TestGivingUpVIPResetsConnections: when a master gives up the VIP, the clients of
// connections to the VIP (here a quiet one, like a watch) get a reset at once and can
// reconnect to the new master; with --reset-connections=false they are left waiting.
func TestGivingUpVIPResetsConnections(t *testing.T) {
	for _, tc := range []struct {
		name        string
		extra       []string
		transparent bool // the listener is IP_TRANSPARENT, as lbproxy's
		wantReset   bool
	}{
		// After the handover drain, from the address it no longer has.
		{"default", nil, true, true},
		// Before the address goes: any listener.
		{"no drain", []string{"--handover-drain=0"}, false, true},
		{"disabled", []string{"--reset-connections=false"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := netns.New(t, "hv-", subnet)
			m1, m2, c := n.AddHost("m1", 11), n.AddHost("m2", 12), n.AddHost("c", 10)
			var ln net.Listener
			if err := m1.Do(func() (err error) {
				ln, err = listen(":7443", tc.transparent) // dual-stack, as lbproxy's ":8443"
				return err
			}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { conn.Close() })
				}
			}()
			p1 := startVipd(t, m1, baseArgs(101, tc.extra...)...)
			startVipd(t, m2, baseArgs(100, tc.extra...)...)
			waitHolder(t, "m1", 10*time.Second, m1, m2)

			var conn net.Conn
			if err := c.Do(func() (err error) {
				conn, err = net.DialTimeout("tcp", vipA+":7443", 5*time.Second)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer conn.Close()

			p1.Signal(syscall.SIGTERM)
			waitHolder(t, "m2", 20*time.Second, m1, m2)
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := conn.Read(make([]byte, 1))
			var ne net.Error
			switch {
			case tc.wantReset && !errors.Is(err, syscall.ECONNRESET):
				t.Fatalf("read after the VIP moved: %v, want a connection reset", err)
			case !tc.wantReset && !(errors.As(err, &ne) && ne.Timeout()):
				t.Fatalf("read after the VIP moved: %v, want the client left waiting (timeout)", err)
			}
		})
	}
}

// TestSimultaneousTakeover: two backups of equal priority take over at about the same moment
// when the master crashes (same skew, so it is a race which fires first and whether both do);
// one ends up holding the VIP, and whatever order their gratuitous ARPs reached a third host
// in, the holder's follow-up announcement leaves that host pointed at it (the 5 s repeat burst
// is off, so only that one can do it). Several rounds, since the order is a race.
func TestSimultaneousTakeover(t *testing.T) {
	for round := 0; round < 3; round++ {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			n := netns.New(t, "hv-", subnet)
			m1, m2, m3 := n.AddHost("m1", 11), n.AddHost("m2", 12), n.AddHost("m3", 13)
			client := n.AddHost("c", 50)
			args := func(prio int) []string { return baseArgs(prio, "--garp-repeat-delay", "0") }
			startVipd(t, m1, args(101)...)
			startVipd(t, m2, args(100)...)
			startVipd(t, m3, args(100)...)
			waitHolder(t, "m1", 10*time.Second, m1, m2, m3)
			if !ping(client, vipA) {
				t.Fatal("client cannot ping the VIP on m1")
			}
			m1.Crash()
			waitFor(t, 20*time.Second, "exactly one of m2, m3 MASTER with the VIP, the other BACKUP", func() bool {
				got := holders(t, m2, m3)
				if len(got) != 1 {
					return false
				}
				winner, loser := m2, m3
				if got[0] == "m3" {
					winner, loser = m3, m2
				}
				return state(winner) == "MASTER" && state(loser) == "BACKUP"
			})
			winner := m2
			if holders(t, m2, m3)[0] == "m3" {
				winner = m3
			}
			waitFor(t, 20*time.Second, "client neighbour entry for the VIP names the holder "+winner.Name, func() bool {
				return neighbour(client, vipA) == mac(t, winner)
			})
		})
	}
}

// listen opens a TCP listener, IP_TRANSPARENT if asked (as lbproxy's), in the calling
// thread's namespace.
func listen(addr string, transparent bool) (net.Listener, error) {
	lc := net.ListenConfig{}
	if transparent {
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, unix.IPV6_TRANSPARENT, 1)
			})
			return errors.Join(err, serr)
		}
	}
	return lc.Listen(context.Background(), "tcp", addr)
}

// synRetrans returns the host's count of retransmitted SYNs (TcpExt TCPSynRetrans): a SYN
// that met no holder of the VIP is sent again after 1 s.
func synRetrans(t *testing.T, h *netns.Host) int {
	t.Helper()
	out, err := h.Exec("cat", "/proc/net/netstat")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "TcpExt:" || len(values) != len(names) {
			continue
		}
		for j, n := range names {
			if n == "TCPSynRetrans" {
				v, err := strconv.Atoi(values[j])
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
	}
	t.Fatalf("no TcpExt TCPSynRetrans in /proc/net/netstat of %s", h.Name)
	return 0
}

// TestMakeBeforeBreakHandover: a master stopped with SIGTERM keeps the VIP (LEAVING) until
// the backup has bound and announced it, then keeps it deprecated for the drain while the
// new master passes it the packets of its connections. A client that opens a connection to
// the VIP every few milliseconds throughout never has a SYN go unanswered (no
// retransmission) nor a connection reset, a request in flight on the old master still gets
// its response, and a connection left idle there is reset after the drain, so its client
// reconnects.
func TestMakeBeforeBreakHandover(t *testing.T) {
	testenv.RequireCommand(t, "nft") // the new master passes the old one's connections back
	n := netns.New(t, "hv-", subnet)
	m1, m2, c := n.AddHost("m1", 11), n.AddHost("m2", 12), n.AddHost("c", 10)

	// m1's server answers "pong" to each line, except the first connection's, which it
	// holds until respond is closed.
	respond := make(chan struct{})
	gotRequest := make(chan struct{})
	serve := func(h *netns.Host, holdFirst bool) {
		var ln net.Listener
		if err := h.Do(func() (err error) { ln, err = listen(":7443", true); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		first := holdFirst
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { conn.Close() })
				hold := first
				first = false
				go func() {
					r := bufio.NewReader(conn)
					for {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
						if hold {
							close(gotRequest)
							<-respond
							hold = false
						}
						if _, err := conn.Write([]byte("pong\n")); err != nil {
							return
						}
					}
				}()
			}
		}()
	}
	serve(m1, true)
	serve(m2, false)
	// A long drain, so that the held response is written well within it however slow
	// the machine is.
	args := func(prio int) []string { return baseArgs(prio, "--handover-drain", "3s") }
	p1 := startVipd(t, m1, args(101)...)
	startVipd(t, m2, args(100)...)
	waitHolder(t, "m1", 10*time.Second, m1, m2)

	dial := func() (net.Conn, error) {
		var conn net.Conn
		err := c.Do(func() (err error) {
			conn, err = net.DialTimeout("tcp", vipA+":7443", 5*time.Second)
			return err
		})
		return conn, err
	}
	held, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	<-gotRequest
	idle, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	// The client's connection loop: each a new connection and one exchange.
	retransBefore := synRetrans(t, c)
	stop := make(chan struct{})
	type result struct{ ok, connectFailed, exchangeFailed int }
	results := make(chan result)
	go func() {
		var r result
		defer func() { results <- r }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			conn, err := dial()
			if err != nil {
				r.connectFailed++
				t.Logf("connect: %v", err)
				continue
			}
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Write([]byte("ping\n"))
			if err == nil {
				_, err = bufio.NewReader(conn).ReadString('\n')
			}
			conn.Close()
			if err != nil {
				// The client's packets of a connection opened with m1 go to m2 once
				// m2 has announced the VIP: m2 must pass them to m1 (--handover-forward).
				r.exchangeFailed++
				t.Logf("exchange: %v", err)
				continue
			}
			r.ok++
			time.Sleep(2 * time.Millisecond) // the client's pace, not synchronisation
		}
	}()

	p1.Signal(syscall.SIGTERM)
	waitFor(t, 10*time.Second, "m2 MASTER with the VIP, m1 keeping it deprecated for the drain", func() bool {
		out, _ := m1.Exec("ip", "-4", "-o", "addr", "show", "dev", "eth0")
		return state(m2) == "MASTER" && hasVIP(t, m2, vipA) && strings.Contains(out, "deprecated")
	})
	// A few more exchanges with m2 holding the VIP, then stop.
	time.Sleep(50 * time.Millisecond) // the client's pace, not synchronisation
	close(stop)
	r := <-results
	t.Logf("connections during the handover: %d answered, %d connects failed, %d exchanges reset", r.ok, r.connectFailed, r.exchangeFailed)
	if r.connectFailed != 0 {
		t.Errorf("%d connects to the VIP failed during the handover", r.connectFailed)
	}
	if r.exchangeFailed != 0 {
		t.Errorf("%d exchanges on connections m1 carried were reset: m2 did not pass their packets to m1", r.exchangeFailed)
	}
	if d := synRetrans(t, c) - retransBefore; d != 0 {
		t.Errorf("the client retransmitted %d SYNs during the handover: a SYN met no holder of the VIP", d)
	}
	if r.ok == 0 {
		t.Error("no connection was answered during the handover")
	}

	// The response held on m1 still reaches the client after m1 let go of the VIP.
	close(respond)
	_ = held.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(held).ReadString('\n')
	if err != nil || line != "pong\n" {
		t.Fatalf("response in flight on m1 after it let go of the VIP: %q, %v; want pong", line, err)
	}
	// The idle connection is reset at the end of the drain; vipd then exits.
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("idle connection on m1 after the drain: %v, want a connection reset", err)
	}
	waitExit(t, p1)
	waitHolder(t, "m2", 10*time.Second, m1, m2)
	out := p1.Output()
	if !strings.Contains(out, "MASTER") || !strings.Contains(out, `to=LEAVING`) || !strings.Contains(out, "handed over to "+subnet+".12") {
		t.Fatalf("m1's vipd did not hand over to m2 through LEAVING:\n%s", out)
	}
}

// TestLoneMasterHandoverTimeout: a master with nobody to hand over to stays LEAVING with the
// VIP bound but deprecated (so that anyone can tell it from a master claiming it), then lets
// go after --handover-timeout and exits.
func TestLoneMasterHandoverTimeout(t *testing.T) {
	n := netns.New(t, "hv-", subnet)
	m1 := n.AddHost("m1", 11)
	p1 := startVipd(t, m1, baseArgs(101, "--handover-timeout", "3s")...)
	waitHolder(t, "m1", 10*time.Second, m1)
	if out, _ := m1.Exec("ip", "-4", "-o", "addr", "show", "dev", "eth0"); strings.Contains(out, "deprecated") {
		t.Fatalf("MASTER's VIP is deprecated:\n%s", out)
	}
	p1.Signal(syscall.SIGTERM)
	waitFor(t, 5*time.Second, "m1 LEAVING with the VIP bound and deprecated", func() bool {
		out, _ := m1.Exec("ip", "-4", "-o", "addr", "show", "dev", "eth0")
		return state(m1) == "LEAVING" && strings.Contains(out, " "+vipA+"/") && strings.Contains(out, "deprecated")
	})
	waitExit(t, p1)
	if hasVIP(t, m1, vipA) {
		t.Fatal("m1 still holds the VIP after vipd exited")
	}
	if out := p1.Output(); !strings.Contains(out, "no other router advertised within 3s") {
		t.Fatalf("m1's vipd did not let go at the handover timeout:\n%s", out)
	}
}
