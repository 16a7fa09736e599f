package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
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

// topology is the drill's network: an internal/netns network, and per host the netlink
// handle the drill's checks read addresses, routes and neighbours with.
type topology struct {
	*hnetns.Net
	dir    string // per-run temp dir: logs, configs, data dirs
	prefix string // of every namespace name

	mu        sync.Mutex
	hosts     []*host
	destroyed sync.Once
}

// host is one network namespace on the bridge.
type host struct {
	*hnetns.Host
	topo *topology
	MAC  string // of Iface
	nl   *netlink.Handle
}

// proc is a process started inside a host.
type proc = hnetns.Proc

func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newTopology deletes what an earlier run with the same prefix left behind and builds the
// bridge namespace; dir receives logs and configs.
func newTopology(dir, prefix string) (*topology, error) {
	hnetns.DeleteAll(prefix)
	n, err := hnetns.Create(prefix, subnet)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return &topology{Net: n, dir: dir, prefix: prefix}, nil
}

// addHost creates namespace prefix+name with eth0 at subnet.octet/24 on the bridge.
func (t *topology) addHost(name string, octet int) (*host, error) {
	nh, err := t.CreateHost(name, octet)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	h := &host{Host: nh, topo: t}
	t.mu.Lock()
	t.hosts = append(t.hosts, h)
	t.mu.Unlock()
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
		if out, err := r.Exec("sysctl", "-qw", kv); err != nil {
			return nil, fmt.Errorf("topology: router sysctl %s: %v: %s", kv, err, strings.TrimSpace(out))
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
	cmd := r.Command(context.Background(), "nft", "-f", "-")
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
		if h.nl != nil {
			h.nl.Close()
		}
	}
	t.Destroy()
	hnetns.DeleteAll(t.prefix)
}

// start runs a long-lived program inside the host, with output to a log file in the run's
// directory. It runs in its own process group so that a Ctrl-C on the terminal reaches the
// drill only, which then kills everything by PID.
func (h *host) start(name string, args ...string) (*proc, error) {
	return h.Launch(filepath.Join(h.topo.dir, "logs", fmt.Sprintf("%s-%s-%d.log", h.Name, filepath.Base(name), time.Now().UnixNano())), name, args...)
}

// crash is a power cut: link down first so that nothing leaves the host, then every
// process in the namespace stopped and killed.
func (h *host) crash() error {
	if err := h.SwitchLink(false); err != nil {
		return err
	}
	hnetns.KillAll(h.NS)
	h.waitProcs(5 * time.Second)
	return nil
}

// stopGracefully sends SIGTERM to every process of the host, as systemd does at shutdown,
// and kills what has not exited after grace.
func (h *host) stopGracefully(grace time.Duration) {
	procs := h.Running()
	for _, p := range procs {
		p.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, p := range procs {
		select {
		case <-p.Done():
		case <-time.After(time.Until(deadline)):
			p.Signal(syscall.SIGKILL)
			<-p.Done()
		}
	}
}

// killAll kills the processes the drill started and anything else in the namespace.
func (h *host) killAll() {
	for _, p := range h.Running() {
		p.Signal(syscall.SIGKILL)
	}
	hnetns.KillAll(h.NS)
}

func (h *host) waitProcs(d time.Duration) {
	deadline := time.After(d)
	for _, p := range h.Running() {
		select {
		case <-p.Done():
		case <-deadline:
			return
		}
	}
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
