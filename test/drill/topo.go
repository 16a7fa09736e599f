package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	hnetns "github.com/hacp/hacp/internal/netns"
)

// The drill's network: one bridge namespace and a namespace per host, all named with
// nsPrefix so that a later run can find and delete what an interrupted run left behind.
const (
	nsPrefix = "hd-"
	subnet   = "10.77.0"
	vipAddr  = subnet + ".100"

	// hacp-bgp: the router namespace's address on the bridge, and the VIP, in a /24 no
	// host is on, so that nothing ARPs for it: the client reaches it through the router.
	routerAddr = subnet + ".1"
	bgpVIPAddr = "10.77.8.100"
)

// topology is the drill's own small version of internal/netns (which needs a testing.TB):
// the same rules, for a main package that must clean up on errors and signals itself.
type topology struct {
	dir    string // per-run temp dir: logs, configs, data dirs
	prefix string // of every namespace name
	bridge string // namespace holding the bridge br0: prefix + "br"
	hosts  []*host

	mu        sync.Mutex
	destroyed sync.Once
}

// host is one network namespace on the bridge.
type host struct {
	topo       *topology
	Name       string // "m1"
	NS         string // "hd-m1"
	Addr       netip.Addr
	Iface      string // "eth0" inside the host
	BridgePort string // "p-m1" in the bridge namespace

	MAC string // of Iface

	mu    sync.Mutex
	procs []*proc
	link  bool // bridge port up
	nl    *netlink.Handle
}

// proc is a process started inside a host.
type proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string
	done chan struct{}
}

func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// cleanupLeftovers deletes every namespace named with prefix, killing its processes by
// PID first: what an interrupted earlier run (or this one) left behind.
func cleanupLeftovers(prefix string) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			hnetns.Delete(e.Name())
		}
	}
}

// newTopology deletes what an earlier run with the same prefix left behind and builds the
// bridge namespace; dir receives logs and configs.
func newTopology(dir, prefix string) (*topology, error) {
	cleanupLeftovers(prefix)
	t := &topology{dir: dir, prefix: prefix, bridge: prefix + "br"}
	bridgeNS := t.bridge
	for _, args := range [][]string{
		{"netns", "add", bridgeNS},
		{"-n", bridgeNS, "link", "set", "lo", "up"},
		{"-n", bridgeNS, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0"},
		{"-n", bridgeNS, "link", "set", "br0", "up"},
	} {
		if err := runIP(args...); err != nil {
			t.destroy()
			return nil, fmt.Errorf("topology: %w", err)
		}
	}
	return t, nil
}

// addHost creates namespace prefix+name with eth0 at subnet.octet/24 on the bridge.
func (t *topology) addHost(name string, octet int) (*host, error) {
	h := &host{
		topo:       t,
		Name:       name,
		NS:         t.prefix + name,
		Addr:       netip.MustParseAddr(fmt.Sprintf("%s.%d", subnet, octet)),
		Iface:      "eth0",
		BridgePort: "p-" + name,
		link:       true,
	}
	t.mu.Lock()
	t.hosts = append(t.hosts, h)
	t.mu.Unlock()
	bridgeNS := t.bridge
	for _, args := range [][]string{
		{"netns", "add", h.NS},
		{"-n", h.NS, "link", "set", "lo", "up"},
		{"-n", bridgeNS, "link", "add", h.BridgePort, "type", "veth", "peer", "name", h.Iface, "netns", h.NS},
		{"-n", bridgeNS, "link", "set", h.BridgePort, "master", "br0", "up"},
		{"-n", h.NS, "addr", "add", h.Addr.String() + "/24", "dev", h.Iface},
		{"-n", h.NS, "link", "set", h.Iface, "up"},
	} {
		if err := runIP(args...); err != nil {
			return nil, fmt.Errorf("topology: host %s: %w", name, err)
		}
	}
	nsh, err := netns.GetFromPath("/run/netns/" + h.NS)
	if err != nil {
		return nil, fmt.Errorf("topology: open %s: %w", h.NS, err)
	}
	defer nsh.Close()
	if h.nl, err = netlink.NewHandleAt(nsh); err != nil {
		return nil, fmt.Errorf("topology: netlink in %s: %w", h.NS, err)
	}
	l, err := h.nl.LinkByName(h.Iface)
	if err != nil {
		return nil, fmt.Errorf("topology: %s in %s: %w", h.Iface, h.NS, err)
	}
	h.MAC = l.Attrs().HardwareAddr.String()
	return h, nil
}

// addRouter creates the router namespace on the bridge (routerAddr), forwarding, with ECMP
// hashing on ports so that the client's connections spread over the masters, and routes
// the client's traffic for the BGP VIP's /24 through it.
func (t *topology) addRouter(client *host) (*host, error) {
	r, err := t.addHost("router", 1)
	if err != nil {
		return nil, err
	}
	// The client and the masters share the router's segment: without send_redirects=0
	// the router would tell the client to send the VIP's packets straight to whichever
	// master it picked first, and the client would keep doing so (bypassing ECMP, and
	// blackholing after that master dies).
	for _, kv := range []string{"net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
		"net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0", "net.ipv4.conf." + r.Iface + ".send_redirects=0"} {
		if out, err := exec.Command("nsenter", "--net=/run/netns/"+r.NS, "--", "sysctl", "-qw", kv).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("topology: router sysctl %s: %v: %s", kv, err, strings.TrimSpace(string(out)))
		}
	}
	if err := runIP("-n", client.NS, "route", "add", strings.TrimSuffix(bgpVIPAddr, ".100")+".0/24", "via", routerAddr); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return r, nil
}

// pinConnections makes the router keep every established connection to the BGP VIP on
// the next hop its first packet took, whatever becomes of the ECMP route (a stateful
// router, as L4 balancers are): the next hop chosen for a connection's first packet is
// stored in its conntrack mark (nftables `rt ip nexthop`), and later packets carrying that
// mark are routed by a rule to a table whose only route is through that master. New
// connections follow the ECMP route. Without it, a connection in flight when a master's
// route is withdrawn is hashed onto another master, which resets it.
//
// The router must see both directions for conntrack to follow a connection: the masters
// would answer the client, on their own segment, directly; a rule on each master sends
// what leaves from the BGP VIP through the router instead, as it would go where the client
// sits behind the router.
func (r *host) pinConnections(masters []*host, client *host) error {
	for _, m := range masters {
		if err := runIP("-n", m.NS, "route", "add", client.Addr.String()+"/32", "via", routerAddr, "table", "200"); err != nil {
			return fmt.Errorf("topology: pin: %w", err)
		}
		if err := runIP("-n", m.NS, "rule", "add", "from", bgpVIPAddr, "table", "200", "pref", "100"); err != nil {
			return fmt.Errorf("topology: pin: %w", err)
		}
	}
	var nh []string
	for i, m := range masters {
		mark := 11 + i
		nh = append(nh, fmt.Sprintf("%s : %d", m.Addr, mark))
		table := strconv.Itoa(100 + mark)
		if err := runIP("-n", r.NS, "route", "add", bgpVIPAddr+"/32", "via", m.Addr.String(), "table", table); err != nil {
			return fmt.Errorf("topology: pin: %w", err)
		}
		if err := runIP("-n", r.NS, "rule", "add", "fwmark", strconv.Itoa(mark), "table", table, "pref", "100"); err != nil {
			return fmt.Errorf("topology: pin: %w", err)
		}
	}
	rules := fmt.Sprintf(`table ip hacp_pin {
	chain post {
		type filter hook postrouting priority 0; policy accept;
		ip daddr %[1]s ct state new ct mark set rt ip nexthop map { %[2]s }
	}
	chain pre {
		type filter hook prerouting priority -150; policy accept;
		ip daddr %[1]s ct state established ct mark != 0 meta mark set ct mark
	}
}
`, bgpVIPAddr, strings.Join(nh, ", "))
	cmd := exec.Command("nsenter", "--net=/run/netns/"+r.NS, "--", "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("topology: pin: nft: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// routeVia returns the next hops (gateways) of the host's kernel route to dst, sorted.
func (h *host) routeVia(dst netip.Addr) []netip.Addr {
	routes, err := h.nl.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{
		Dst: &net.IPNet{IP: dst.AsSlice(), Mask: net.CIDRMask(32, 32)},
	}, netlink.RT_FILTER_DST)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, r := range routes {
		if a, ok := netip.AddrFromSlice(r.Gw); ok {
			out = append(out, a.Unmap())
		}
		for _, nh := range r.MultiPath {
			if a, ok := netip.AddrFromSlice(nh.Gw); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// destroy kills every process by PID and deletes every namespace; later calls do nothing.
func (t *topology) destroy() { t.destroyed.Do(t.teardown) }

func (t *topology) teardown() {
	t.mu.Lock()
	hosts := t.hosts
	t.mu.Unlock()
	for _, h := range hosts {
		h.killAll()
		if h.nl != nil {
			h.nl.Close()
		}
		hnetns.Delete(h.NS)
	}
	hnetns.Delete(t.bridge)
	cleanupLeftovers(t.prefix)
}

// start runs a long-lived program inside the host, with output to a log file in the run's
// directory. It runs in its own process group so that a Ctrl-C on the terminal reaches the
// drill only, which then kills everything by PID.
func (h *host) start(name string, args ...string) (*proc, error) {
	logPath := filepath.Join(h.topo.dir, "logs", fmt.Sprintf("%s-%s-%d.log", h.Name, filepath.Base(name), time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + h.NS, "--", name}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", h.Name, name, err)
	}
	p := &proc{Name: filepath.Base(name), Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

func (p *proc) signal(sig syscall.Signal) {
	if p.Cmd.Process != nil {
		_ = p.Cmd.Process.Signal(sig)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last n bytes of the process's log.
func (p *proc) tail(n int) string {
	data, _ := os.ReadFile(p.Log)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// running returns the host's processes that have not exited.
func (h *host) running() []*proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*proc
	for _, p := range h.procs {
		if !p.exited() {
			out = append(out, p)
		}
	}
	return out
}

// crash is a power cut: link down first so that nothing leaves the host, then every
// process in the namespace stopped and killed.
func (h *host) crash() error {
	if err := h.setLink(false); err != nil {
		return err
	}
	hnetns.KillAll(h.NS)
	h.waitProcs(5 * time.Second)
	return nil
}

// stopGracefully sends SIGTERM to every process of the host, as systemd does at shutdown,
// and kills what has not exited after grace.
func (h *host) stopGracefully(grace time.Duration) {
	procs := h.running()
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
			p.signal(syscall.SIGKILL)
			<-p.done
		}
	}
}

// killAll kills the processes the drill started and anything else in the namespace.
func (h *host) killAll() {
	for _, p := range h.running() {
		p.signal(syscall.SIGKILL)
	}
	hnetns.KillAll(h.NS)
}

func (h *host) waitProcs(d time.Duration) {
	deadline := time.After(d)
	for _, p := range h.running() {
		select {
		case <-p.done:
		case <-deadline:
			return
		}
	}
}

// setLink sets the host's bridge port up or down.
func (h *host) setLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if err := runIP("-n", h.topo.bridge, "link", "set", h.BridgePort, state); err != nil {
		return err
	}
	h.mu.Lock()
	h.link = up
	h.mu.Unlock()
	return nil
}

func (h *host) linkUp() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.link
}

// carrier reports whether the host's interface is up and running (has carrier).
func (h *host) carrier() bool {
	l, err := h.nl.LinkByName(h.Iface)
	if err != nil {
		return false
	}
	f := l.Attrs().RawFlags
	return f&unix.IFF_UP != 0 && f&unix.IFF_RUNNING != 0
}

// neighbourMAC returns the link-layer address the host's neighbour table holds for addr,
// or "" when it has no usable entry.
func (h *host) neighbourMAC(addr netip.Addr) string {
	neighs, err := h.nl.NeighList(0, netlink.FAMILY_V4)
	if err != nil {
		return ""
	}
	for _, n := range neighs {
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr && len(n.HardwareAddr) > 0 &&
			n.State&(netlink.NUD_INCOMPLETE|netlink.NUD_FAILED) == 0 {
			return n.HardwareAddr.String()
		}
	}
	return ""
}

// holdsAddr reports whether addr is configured on any interface of the host.
func (h *host) holdsAddr(addr netip.Addr) bool {
	held, _ := h.addrState(addr)
	return held
}

// addrState reports whether addr is bound on the host, and whether it is deprecated
// (preferred lifetime 0): how vipd marks a VIP it is handing over (LEAVING).
func (h *host) addrState(addr netip.Addr) (held, deprecated bool) {
	addrs, err := h.nl.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return false, false
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
			return true, a.Flags&unix.IFA_F_DEPRECATED != 0 || a.PreferedLft == 0
		}
	}
	return false, false
}

// dialContext dials from inside the host's network namespace.
func (h *host) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := h.do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// do runs fn on an OS thread switched into the host's network namespace. Sockets that fn
// creates (the socket is made synchronously, on this thread) stay in that namespace and
// may be used afterwards from any goroutine.
func (h *host) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + h.NS)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter %s: %w", h.NS, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and is discarded by the runtime when this goroutine
			// ends.
			errc <- fmt.Errorf("leave %s: %w", h.NS, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
