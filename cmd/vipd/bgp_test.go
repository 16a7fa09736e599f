package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gobgpapi "github.com/osrg/gobgp/v3/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/pkg/vip"
)

// The BGP mode's namespace tests build a routed network: a router namespace with one
// interface in each of several /24s (one bridge each), a master in each of three of them
// and a client in a fourth, so that the masters share no L2 segment and the VIP reaches the
// client only through routes the router learnt from vipd.
const (
	bgpVIP    = "10.77.45.100" // on no subnet: reachable only through the announced /32
	routerAS  = "65000"
	mastersAS = "65100"
	statusAt  = "127.0.0.1:9901" // every master is its own namespace
	holdTime  = "9s"             // FRR's datacenter profile and vipd's default
)

type routedNet struct {
	router  *netns.Host
	masters []*netns.Host
	client  *netns.Host
	gw      []string // the router's address in each master's subnet
}

// newRoutedNet builds the router, three masters in 10.77.41-43.0/24 and a client in
// 10.77.44.0/24; prefix keeps the namespaces apart from other tests'.
func newRoutedNet(t *testing.T, prefix string) *routedNet {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip", "nsenter", "sysctl")
	rn := &routedNet{}
	// The router is a host of the first subnet, with an interface in each of the others.
	first := netns.New(t, prefix+"a", "10.77.41")
	rn.router = first.AddHost("r", 1)
	for i, sub := range []string{"10.77.41", "10.77.42", "10.77.43", "10.77.44"} {
		n := first
		if i > 0 {
			n = netns.New(t, prefix+string(rune('a'+i)), sub)
			ifname := fmt.Sprintf("eth%d", i)
			port := fmt.Sprintf("p-r%d", i)
			ipCmd(t, "ip", "-n", n.BridgeNS, "link", "add", port, "type", "veth", "peer", "name", ifname, "netns", rn.router.NS)
			ipCmd(t, "ip", "-n", n.BridgeNS, "link", "set", port, "master", "br0", "up")
			ipCmd(t, "ip", "-n", rn.router.NS, "addr", "add", sub+".1/24", "dev", ifname)
			ipCmd(t, "ip", "-n", rn.router.NS, "link", "set", ifname, "up")
		}
		if i < 3 {
			m := n.AddHost(fmt.Sprintf("m%d", i+1), 11+i)
			ipCmd(t, "ip", "-n", m.NS, "route", "add", "default", "via", sub+".1")
			rn.masters = append(rn.masters, m)
			rn.gw = append(rn.gw, sub+".1")
		} else {
			rn.client = n.AddHost("c", 50)
			ipCmd(t, "ip", "-n", rn.client.NS, "route", "add", "default", "via", sub+".1")
		}
	}
	rn.router.Run("sysctl", "-qw", "net.ipv4.ip_forward=1")
	// Hash on ports as well, so that the client's connections spread over the masters.
	rn.router.Run("sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1")
	return rn
}

func ipCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// frr is FRR's zebra and bgpd running in the router namespace with their own config,
// socket and pid files.
type frr struct {
	h   *netns.Host
	dir string
}

func startFRR(t *testing.T, h *netns.Host, bgpdConf string) *frr {
	t.Helper()
	return startFRRWithBFD(t, h, bgpdConf, "")
}

// startFRRWithBFD is startFRR with FRR's bfdd as well, configured by bfddConf, when that
// is not empty.
func startFRRWithBFD(t *testing.T, h *netns.Host, bgpdConf, bfddConf string) *frr {
	t.Helper()
	testenv.RequireCommand(t, "vtysh")
	daemons := []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd"}
	if bfddConf != "" {
		daemons = append(daemons, "/usr/lib/frr/bfdd")
	}
	for _, d := range daemons {
		_, err := os.Stat(d)
		testenv.Require(t, err == nil, d+" (Debian package frr)")
	}
	// FRR's daemons drop to user frr, which must own their socket directory (and reach
	// it: t.TempDir's parents are root's alone).
	u, err := user.Lookup("frr")
	testenv.Require(t, err == nil, "user frr (Debian package frr)")
	dir, err := os.MkdirTemp("", "hb-frr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	f := &frr{h: h, dir: dir}
	write := func(name, body string) string {
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zconf := write("zebra.conf", "hostname router\n")
	bconf := write("bgpd.conf", bgpdConf)
	common := []string{"-z", filepath.Join(f.dir, "zserv.api"),
		"--vty_socket", f.dir, "-A", "127.0.0.1", "-P", "0", "--log", "stdout", "--log-level", "info"}
	h.Start("/usr/lib/frr/zebra", append([]string{"-f", zconf, "-i", filepath.Join(f.dir, "zebra.pid")}, common...)...)
	waitFor(t, 30*time.Second, "zebra's socket", func() bool {
		_, err := os.Stat(filepath.Join(f.dir, "zserv.api"))
		return err == nil
	})
	if bfddConf != "" {
		h.Start("/usr/lib/frr/bfdd", append([]string{"-f", write("bfdd.conf", bfddConf), "-i", filepath.Join(f.dir, "bfdd.pid"),
			"--bfdctl", filepath.Join(f.dir, "bfdd.sock")}, common...)...)
		waitFor(t, 30*time.Second, "bfdd answering vtysh", func() bool {
			_, err := f.vtyshErr("show bfd peers")
			return err == nil
		})
	}
	h.Start("/usr/lib/frr/bgpd", append([]string{"-f", bconf, "-i", filepath.Join(f.dir, "bgpd.pid")}, common...)...)
	waitFor(t, 30*time.Second, "bgpd answering vtysh", func() bool {
		_, err := f.vtyshErr("show bgp summary")
		return err == nil
	})
	return f
}

func (f *frr) vtyshErr(cmd string) (string, error) {
	return f.h.Exec("vtysh", "--vty_socket", f.dir, "-c", cmd)
}

func (f *frr) vtysh(t *testing.T, cmd string) string {
	t.Helper()
	out, err := f.vtyshErr(cmd)
	if err != nil {
		t.Fatalf("vtysh -c %q: %v: %s", cmd, err, out)
	}
	return out
}

// frrRoute is what `show ip bgp PREFIX json` says about the VIP.
type frrRoute struct {
	Paths []struct {
		Valid     bool `json:"valid"`
		Multipath bool `json:"multipath"`
		Community struct {
			String string `json:"string"`
		} `json:"community"`
		Nexthops []struct {
			IP string `json:"ip"`
		} `json:"nexthops"`
	} `json:"paths"`
}

// nexthops returns the next hops of the router's valid BGP paths to the VIP, sorted.
func (f *frr) nexthops() []string {
	out, err := f.vtyshErr("show ip bgp " + bgpVIP + "/32 json")
	if err != nil {
		return nil
	}
	var r frrRoute
	if json.Unmarshal([]byte(out), &r) != nil {
		return nil
	}
	var nh []string
	for _, p := range r.Paths {
		if p.Valid && len(p.Nexthops) > 0 {
			nh = append(nh, p.Nexthops[0].IP)
		}
	}
	return sortStrings(nh)
}

// kernelNexthops returns the next hops of the router's kernel route to the VIP (what
// zebra installed from the BGP paths), sorted.
func kernelNexthops(h *netns.Host) []string {
	out, err := h.Exec("ip", "-4", "route", "show", bgpVIP+"/32")
	if err != nil {
		return nil
	}
	var nh []string
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "via" {
			nh = append(nh, f[i+1])
		}
	}
	return sortStrings(nh)
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func addrs(hs ...*netns.Host) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Addr.String())
	}
	return sortStrings(out)
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// backend is an apiserver stand-in on a master: TLS on :6443 with /healthz (which can be
// made to fail) and /name.
type backend struct{ healthy atomic.Bool }

func startBackend(t *testing.T, h *netns.Host) *backend {
	t.Helper()
	b := &backend{}
	b.healthy.Store(true)
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", h.Addr.String()+":6443")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !b.healthy.Load() {
			http.Error(w, "unhealthy", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/name", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, h.Name) })
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return b
}

// startLBProxy runs lbproxy on m, listening on every address (the VIP comes and goes on lo)
// and balancing over every master's backend.
func startLBProxy(t *testing.T, m *netns.Host, masters []*netns.Host) {
	t.Helper()
	args := []string{"--listen", "0.0.0.0:8443", "--status-addr", "127.0.0.1:9000",
		"--check-insecure", "--check-interval", "1s", "--check-fast-interval", "200ms", "--log-level", "info"}
	for _, o := range masters {
		args = append(args, "--backend", o.Addr.String()+":6443")
	}
	m.Start(lbproxyBin, args...)
}

// vipdArgs are a BGP mode vipd's flags on master i, peering with the router's address in
// its subnet.
func vipdArgs(rn *routedNet, i int, extra ...string) []string {
	m := rn.masters[i]
	return append([]string{"--mode", "bgp", "--vip", bgpVIP + "/32",
		"--bgp-as", mastersAS, "--bgp-peer", rn.gw[i] + ":" + routerAS,
		"--bgp-hold-time", holdTime, "--bgp-keepalive", "3s", "--bgp-connect-retry", "1s",
		"--bgp-community", "65100:443",
		"--check-url", "https://" + m.Addr.String() + ":6443/healthz", "--check-interval", "200ms",
		"--status-addr", statusAt, "--log-level", "debug"}, extra...)
}

func startVipd(t *testing.T, h *netns.Host, args ...string) *netns.Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := h.Start("env", append([]string{"VIPD_TEST_MAIN=1", exe}, args...)...)
	t.Cleanup(func() {
		if strings.Contains(p.Output(), "DATA RACE") {
			t.Errorf("%s: vipd reported a data race:\n%s", h.Name, p.Output())
		}
	})
	waitFor(t, 30*time.Second, h.Name+" vipd status server up", func() bool {
		_, err := getStatus(h)
		return err == nil
	})
	return p
}

// getStatus fetches vipd's /status from inside the host.
func getStatus(h *netns.Host) (*vip.Status, error) {
	var st vip.Status
	if err := h.GetJSON(statusAt, "/status", 3*time.Second, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// announced reports whether h's vipd says its VIP is announced to an established peer.
func announced(h *netns.Host) bool {
	st, err := getStatus(h)
	if err != nil || st.BGP == nil || len(st.BGP.VIPs) == 0 || len(st.BGP.Peers) == 0 {
		return false
	}
	return st.BGP.VIPs[0].Announced && st.BGP.Peers[0].Established() && st.BGP.Peers[0].PrefixesSent == 1
}

// onLo reports whether the VIP is bound on h's lo.
func onLo(h *netns.Host) bool {
	out, err := h.Exec("ip", "-4", "-o", "addr", "show", "dev", "lo")
	return err == nil && strings.Contains(out, " "+bgpVIP+"/32")
}

// getName asks the VIP for /name on a new connection from the client host: which backend
// lbproxy chose.
func getName(c *netns.Host) (string, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var conn net.Conn
			err := c.Do(func() (err error) {
				var d net.Dialer
				conn, err = d.DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := hc.Get("https://" + bgpVIP + ":8443/name")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

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

func waitExit(t *testing.T, p *netns.Proc) {
	t.Helper()
	waitFor(t, 30*time.Second, "process exit", func() bool {
		return syscall.Kill(p.Cmd.Process.Pid, 0) != nil
	})
}

const frrConf = `frr defaults datacenter
hostname router
log stdout informational
router bgp 65000
 bgp router-id 10.77.41.1
 no bgp ebgp-requires-policy
 neighbor 10.77.41.11 remote-as 65100
 neighbor 10.77.42.12 remote-as 65100
 neighbor 10.77.43.13 remote-as 65100
 address-family ipv4 unicast
  maximum-paths 8
 exit-address-family
`

// TestBGPWithFRR: three masters in three /24s announce the VIP to FRR's bgpd, which installs
// an ECMP route to all three; a client behind the router reaches VIP:8443 through lbproxy.
// A failing health check withdraws one master's route (and unbinds the VIP from its lo) and
// a passing one brings it back; SIGTERM withdraws and exits; a crashed master's path goes
// when the router's hold timer expires, and the client still gets through.
func TestBGPWithFRR(t *testing.T) {
	rn := newRoutedNet(t, "hb-f")
	f := startFRR(t, rn.router, frrConf)
	var backends []*backend
	var procs []*netns.Proc
	for _, m := range rn.masters {
		backends = append(backends, startBackend(t, m))
	}
	for i, m := range rn.masters {
		startLBProxy(t, m, rn.masters)
		procs = append(procs, startVipd(t, m, vipdArgs(rn, i)...))
	}
	all := addrs(rn.masters...)
	waitFor(t, 60*time.Second, "FRR has a path to the VIP through every master", func() bool {
		return equal(f.nexthops(), all)
	})
	if out := f.vtysh(t, "show ip bgp"); !strings.Contains(out, bgpVIP+"/32") {
		t.Fatalf("show ip bgp does not list %s/32:\n%s", bgpVIP, out)
	}
	if out := f.vtysh(t, "show ip bgp "+bgpVIP+"/32 json"); !strings.Contains(out, `"string":"65100:443"`) {
		t.Errorf("the route lacks the configured community 65100:443:\n%s", out)
	}
	waitFor(t, 30*time.Second, "an ECMP kernel route through every master at the router", func() bool {
		return equal(kernelNexthops(rn.router), all)
	})
	for _, m := range rn.masters {
		waitFor(t, 30*time.Second, m.Name+" reports the VIP announced to an established peer", func() bool { return announced(m) })
		if !onLo(m) {
			t.Fatalf("%s: VIP not bound on lo while announced", m.Name)
		}
	}
	waitFor(t, 60*time.Second, "the client reaches VIP:8443 through lbproxy", func() bool {
		_, err := getName(rn.client)
		return err == nil
	})

	t.Run("health check withdraws and restores", func(t *testing.T) {
		m2 := rn.masters[1]
		backends[1].healthy.Store(false)
		waitFor(t, 30*time.Second, "FRR without m2's path", func() bool {
			return equal(f.nexthops(), addrs(rn.masters[0], rn.masters[2]))
		})
		st, err := getStatus(m2)
		if err != nil {
			t.Fatal(err)
		}
		if v := st.BGP.VIPs[0]; v.Announced || v.Reason != "health check failing" {
			t.Fatalf("m2 VIP status while unhealthy: %+v", v)
		}
		if p := st.BGP.Peers[0]; !p.Established() || p.PrefixesSent != 0 {
			t.Fatalf("m2 peer while unhealthy: %+v (want the session kept, nothing sent)", p)
		}
		if onLo(m2) {
			t.Fatal("m2 keeps the VIP on lo after withdrawing it")
		}
		// The route is withdrawn once m2's vipd sees its backend fail; the lbproxies of m1 and
		// m3 stop sending to that backend after their own checks fail, a little later.
		waitFor(t, 30*time.Second, "a request through the two healthy masters", func() bool {
			_, err := getName(rn.client)
			return err == nil
		})
		backends[1].healthy.Store(true)
		waitFor(t, 30*time.Second, "FRR with m2's path again", func() bool { return equal(f.nexthops(), all) })
		waitFor(t, 10*time.Second, "m2 binds the VIP again", func() bool { return onLo(m2) })
	})

	t.Run("sigterm withdraws and exits", func(t *testing.T) {
		m3 := rn.masters[2]
		procs[2].Signal(syscall.SIGTERM)
		waitExit(t, procs[2])
		if out := procs[2].Output(); !strings.Contains(out, "BGP routes withdrawn and sessions closed") {
			t.Fatalf("m3 vipd did not log the withdrawal before exiting:\n%s", out)
		}
		waitFor(t, 30*time.Second, "FRR without m3's path", func() bool {
			return equal(f.nexthops(), addrs(rn.masters[0], rn.masters[1]))
		})
		if onLo(m3) {
			t.Fatal("m3 keeps the VIP on lo after vipd exited")
		}
	})

	t.Run("crash is detected by the hold timer", func(t *testing.T) {
		m1 := rn.masters[0]
		m1.Crash() // link down, every process stopped then killed: no NOTIFICATION leaves
		waitFor(t, 90*time.Second, "FRR drops the crashed m1's path (hold timer "+holdTime+")", func() bool {
			return equal(f.nexthops(), addrs(rn.masters[1]))
		})
		waitFor(t, 30*time.Second, "kernel route through m2 only", func() bool {
			return equal(kernelNexthops(rn.router), addrs(rn.masters[1]))
		})
		// m2's lbproxy balances over every backend; its checks find m1's gone.
		ok := 0
		for i := 0; i < 10; i++ {
			if _, err := getName(rn.client); err == nil {
				ok++
			}
		}
		if ok == 0 {
			t.Fatal("the client cannot reach the VIP through the surviving master")
		}
	})
}

// TestBGPPeerErrors: a peer that expects another AS and a peer that does not exist are
// reported in /status (and the log) while the daemon keeps running, keeps announcing to the
// good peer and keeps retrying; once the router is fixed the session comes up.
func TestBGPPeerErrors(t *testing.T) {
	rn := newRoutedNet(t, "hb-e")
	// The router expects AS 65199 from m1, which says 65100.
	f := startFRR(t, rn.router, strings.Replace(frrConf, "neighbor 10.77.41.11 remote-as 65100", "neighbor 10.77.41.11 remote-as 65199", 1))
	m1, m2 := rn.masters[0], rn.masters[1]
	// m2 peers with the router and with an address nobody has.
	p2 := startVipd(t, m2, append(vipdArgs(rn, 1, "--check-url", ""), "--bgp-peer", "10.77.42.99:65000")...)
	p1 := startVipd(t, m1, vipdArgs(rn, 0, "--check-url", "")...)

	waitFor(t, 60*time.Second, "m2's route at the router despite its unreachable second peer", func() bool {
		return equal(f.nexthops(), addrs(m2))
	})
	waitFor(t, 60*time.Second, "m2 reports its second peer down with a reason", func() bool {
		st, err := getStatus(m2)
		if err != nil || len(st.BGP.Peers) != 2 {
			return false
		}
		p := st.BGP.Peers[1]
		return p.Address == "10.77.42.99" && !p.Established() && p.LastError != ""
	})
	waitFor(t, 60*time.Second, "m1 reports the router's refusal", func() bool {
		st, err := getStatus(m1)
		if err != nil || len(st.BGP.Peers) != 1 {
			return false
		}
		p := st.BGP.Peers[0]
		return !p.Established() && strings.Contains(p.LastError, "refused this speaker's OPEN")
	})
	if _, err := f.h.Exec("vtysh", "--vty_socket", f.dir, "-c", "configure terminal", "-c", "router bgp 65000", "-c", "neighbor 10.77.41.11 remote-as 65100"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "m1's session up and its route at the router once the router is fixed", func() bool {
		return equal(f.nexthops(), addrs(m1, m2)) && announced(m1)
	})
	for _, p := range []*netns.Proc{p1, p2} {
		if syscall.Kill(p.Cmd.Process.Pid, 0) != nil {
			t.Fatalf("vipd exited:\n%s", p.Output())
		}
	}
}

// gobgpd is GoBGP's daemon in the router namespace, asked through its gRPC API.
type gobgpd struct {
	h   *netns.Host
	api gobgpapi.GobgpApiClient
}

func startGoBGPd(t *testing.T, h *netns.Host, conf string) *gobgpd {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gobgpd.toml")
	if err := os.WriteFile(p, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Start(gobgpdBin, "-f", p, "-t", "toml", "-p", "--api-hosts", "127.0.0.1:50051", "--pprof-disable", "-l", "info")
	conn, err := grpc.NewClient("passthrough:///127.0.0.1:50051",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var c net.Conn
			err := h.Do(func() (err error) {
				var d net.Dialer
				c, err = d.DialContext(ctx, "tcp", addr)
				return err
			})
			return c, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	g := &gobgpd{h: h, api: gobgpapi.NewGobgpApiClient(conn)}
	waitFor(t, 30*time.Second, "gobgpd's API", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := g.api.GetBgp(ctx, &gobgpapi.GetBgpRequest{})
		return err == nil
	})
	return g
}

// gobgpPath is one path to the VIP in gobgpd's RIB.
type gobgpPath struct {
	NextHop     string
	Communities []uint32
	ASPath      []uint32
}

// paths returns gobgpd's paths to the VIP, sorted by next hop.
func (g *gobgpd) paths() []gobgpPath {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stream, err := g.api.ListPath(ctx, &gobgpapi.ListPathRequest{
		TableType: gobgpapi.TableType_GLOBAL,
		Family:    &gobgpapi.Family{Afi: gobgpapi.Family_AFI_IP, Safi: gobgpapi.Family_SAFI_UNICAST},
		Prefixes:  []*gobgpapi.TableLookupPrefix{{Prefix: bgpVIP + "/32"}},
	})
	if err != nil {
		return nil
	}
	var out []gobgpPath
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		for _, p := range r.GetDestination().GetPaths() {
			var gp gobgpPath
			for _, a := range p.GetPattrs() {
				m, err := a.UnmarshalNew()
				if err != nil {
					continue
				}
				switch v := m.(type) {
				case *gobgpapi.NextHopAttribute:
					gp.NextHop = v.GetNextHop()
				case *gobgpapi.CommunitiesAttribute:
					gp.Communities = v.GetCommunities()
				case *gobgpapi.AsPathAttribute:
					for _, seg := range v.GetSegments() {
						gp.ASPath = append(gp.ASPath, seg.GetNumbers()...)
					}
				}
			}
			out = append(out, gp)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].NextHop < out[j-1].NextHop; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (g *gobgpd) nexthops() []string {
	var nh []string
	for _, p := range g.paths() {
		nh = append(nh, p.NextHop)
	}
	return nh
}

// TestBGPWithGoBGP: the same announcements to GoBGP's own daemon (gobgpd v3.37.0) as a
// peer (no MD5: the test machines' kernels lack TCP_MD5SIG): both masters' /32 arrive with next-hop-self, the masters'
// AS as path and the configured community; a failing health check withdraws one, SIGTERM
// the other.
func TestBGPWithGoBGP(t *testing.T) {
	rn := newRoutedNet(t, "hb-g")
	g := startGoBGPd(t, rn.router, `[global.config]
  as = 65000
  router-id = "10.77.41.1"
[[neighbors]]
  [neighbors.config]
    neighbor-address = "10.77.41.11"
    peer-as = 65100
[[neighbors]]
  [neighbors.config]
    neighbor-address = "10.77.42.12"
    peer-as = 65100
`)
	m1, m2 := rn.masters[0], rn.masters[1]
	b1 := startBackend(t, m1)
	startBackend(t, m2)
	startVipd(t, m1, vipdArgs(rn, 0)...)
	// A long grace, so that the withdrawn-but-still-established moment is easy to see.
	p2 := startVipd(t, m2, vipdArgs(rn, 1, "--bgp-stop-grace", "20s")...)
	waitFor(t, 60*time.Second, "gobgpd has both masters' paths to the VIP", func() bool {
		return equal(g.nexthops(), addrs(m1, m2))
	})
	for _, p := range g.paths() {
		if len(p.Communities) != 1 || p.Communities[0] != 65100<<16|443 {
			t.Errorf("path via %s: communities %v, want [65100:443]", p.NextHop, p.Communities)
		}
		if len(p.ASPath) != 1 || p.ASPath[0] != 65100 {
			t.Errorf("path via %s: AS path %v, want [65100]", p.NextHop, p.ASPath)
		}
	}
	waitFor(t, 30*time.Second, "both vipd report the route sent", func() bool { return announced(m1) && announced(m2) })

	b1.healthy.Store(false)
	waitFor(t, 30*time.Second, "gobgpd without m1's path", func() bool { return equal(g.nexthops(), addrs(m2)) })
	b1.healthy.Store(true)
	waitFor(t, 30*time.Second, "gobgpd with m1's path again", func() bool { return equal(g.nexthops(), addrs(m1, m2)) })

	// SIGTERM: the route is withdrawn while the session stays up (an UPDATE, not a
	// CEASE), then the session closes and vipd exits.
	p2.Signal(syscall.SIGTERM)
	waitFor(t, 30*time.Second, "gobgpd without m2's path after SIGTERM", func() bool { return equal(g.nexthops(), addrs(m1)) })
	if st := g.sessionState(t, m2.Addr.String()); st != gobgpapi.PeerState_ESTABLISHED {
		t.Fatalf("m2's session is %v once its route is withdrawn; want it still established (withdraw first, then close)", st)
	}
	waitFor(t, 60*time.Second, "m2's session closed", func() bool {
		return g.sessionState(t, m2.Addr.String()) != gobgpapi.PeerState_ESTABLISHED
	})
	waitExit(t, p2)
}

func (g *gobgpd) sessionState(t *testing.T, peer string) gobgpapi.PeerState_SessionState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := g.api.ListPeer(ctx, &gobgpapi.ListPeerRequest{Address: peer})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return r.GetPeer().GetState().GetSessionState()
}
