package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FRR, the hacp-bgp stack's router: zebra and bgpd from Debian's frr package, run by hand
// in the router namespace with their own config, socket and pid files.
const (
	frrZebra = "/usr/lib/frr/zebra"
	frrBGPd  = "/usr/lib/frr/bgpd"
	frrBFDd  = "/usr/lib/frr/bfdd"

	routerAS  = 65000
	mastersAS = 65100
)

var frrVersion = sync.OnceValue(func() string {
	out, err := exec.Command(frrBGPd, "--version").Output()
	if err != nil {
		return "bgpd"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
})

// startFRR starts zebra, bfdd (with BFD) and bgpd in the router namespace, peering with
// every master, and returns their processes.
func (c *cluster) startFRR() ([]*proc, error) {
	r := c.d.router
	u, err := user.Lookup("frr")
	if err != nil {
		return nil, fmt.Errorf("user frr (Debian package frr): %w", err)
	}
	// FRR's daemons drop to user frr, which must own the socket directory and reach it
	// (the run's temp dir is root's alone).
	dir, err := os.MkdirTemp("", "hd-frr-")
	if err != nil {
		return nil, err
	}
	c.frrDir = dir
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	var b strings.Builder
	// Milliseconds and the session events in the logs (kept in the drill's logs/): enough to
	// tell afterwards which side took a BFD or BGP session down, and when.
	const frrLog = "log stdout debugging\nlog timestamp precision 3\n"
	fmt.Fprintf(&b, "frr defaults datacenter\nhostname router\n%sdebug bgp neighbor-events\ndebug bgp bfd\nrouter bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n", frrLog, routerAS, routerAddr)
	bfd := c.spec.BFDInterval > 0
	for _, m := range c.d.masters {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n", m.Addr, mastersAS)
		if bfd {
			fmt.Fprintf(&b, " neighbor %s bfd profile hacp\n", m.Addr)
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n")
	files := map[string]string{"zebra.conf": "hostname router\n" + frrLog, "bgpd.conf": b.String()}
	if bfd {
		ms := c.spec.BFDInterval.Milliseconds()
		files["bfdd.conf"] = fmt.Sprintf("hostname router\n%sdebug bfd peer\nbfd\n profile hacp\n  transmit-interval %d\n  receive-interval %d\n  detect-multiplier %d\n !\n!\n",
			frrLog, ms, ms, c.spec.BFDMultiplier)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	common := []string{"-z", filepath.Join(dir, "zserv.api"), "--vty_socket", dir, "-A", "127.0.0.1", "-P", "0", "--log", "stdout", "--log-level", "debug"}
	z, err := r.start(frrZebra, append([]string{"-f", filepath.Join(dir, "zebra.conf"), "-i", filepath.Join(dir, "zebra.pid")}, common...)...)
	if err != nil {
		return nil, err
	}
	if err := pollFile(filepath.Join(dir, "zserv.api")); err != nil {
		return []*proc{z}, fmt.Errorf("zebra did not create its socket: %w\n%s", err, z.Tail(1500))
	}
	procs := []*proc{z}
	if bfd {
		bf, err := r.start(frrBFDd, append([]string{"-f", filepath.Join(dir, "bfdd.conf"), "-i", filepath.Join(dir, "bfdd.pid"),
			"--bfdctl", filepath.Join(dir, "bfdd.sock")}, common...)...)
		if err != nil {
			return procs, err
		}
		procs = append(procs, bf)
	}
	bg, err := r.start(frrBGPd, append([]string{"-f", filepath.Join(dir, "bgpd.conf"), "-i", filepath.Join(dir, "bgpd.pid")}, common...)...)
	if err != nil {
		return procs, err
	}
	return append(procs, bg), nil
}

// bfdUp reports whether the router's bfdd has an Up session with every master.
func (c *cluster) bfdUp() bool {
	out, err := c.d.router.Exec("vtysh", "--vty_socket", c.frrDir, "-c", "show bfd peers json")
	if err != nil {
		return false
	}
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	if json.Unmarshal([]byte(out), &peers) != nil {
		return false
	}
	up := 0
	for _, m := range c.d.masters {
		for _, p := range peers {
			if p.Peer == m.Addr.String() && p.Status == "up" {
				up++
			}
		}
	}
	return up == len(c.d.masters)
}

func pollFile(path string) error {
	return poll(context.Background(), 30*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// vipdBGPArgs is vipd's command line in the hacp-bgp stack on m.
func (c *cluster) vipdBGPArgs() []string {
	args := []string{
		"--mode", "bgp",
		"--vip", bgpVIPAddr + "/32",
		"--bgp-as", strconv.Itoa(mastersAS),
		"--bgp-peer", fmt.Sprintf("%s:%d", routerAddr, routerAS),
		"--bgp-hold-time", c.spec.HoldTime.String(),
		"--bgp-keepalive", c.spec.Keepalive.String(),
		"--check-url", fmt.Sprintf("https://127.0.0.1:%d/healthz", apiPort),
		"--check-ca-file", c.d.bundle.CACert,
	}
	if c.spec.BFDInterval > 0 {
		args = append(args, "--bfd", "--bfd-interval", c.spec.BFDInterval.String(), "--bfd-multiplier", strconv.Itoa(c.spec.BFDMultiplier),
			// The router's bgpd connects as soon as its BFD session comes Up again; a
			// vipd that listens takes that connection at once (docs/vipd.md, BFD).
			"--bgp-listen-port", "179")
	}
	return args
}

// vip is the stack's VIP address.
func (c *cluster) vip() string {
	if c.spec.BGP {
		return bgpVIPAddr
	}
	return vipAddr
}

func (c *cluster) vipURL() string { return fmt.Sprintf("https://%s:%d", c.vip(), lbPort) }

// routedTo returns the masters the router's kernel route to the BGP VIP goes through.
func (c *cluster) routedTo() []string {
	var out []string
	for _, gw := range c.d.router.routeVia(netip.MustParseAddr(bgpVIPAddr)) {
		for _, m := range c.d.masters {
			if m.Addr == gw {
				out = append(out, m.Name)
			}
		}
	}
	return out
}

// settled reports whether the VIP sits where the stack puts it when every master is well:
// on m1 alone (VRRP), or routed through all three masters (BGP).
func (c *cluster) settled(holders []string) bool {
	if c.spec.BGP {
		return len(holders) == len(c.d.masters)
	}
	return len(holders) == 1 && holders[0] == "m1"
}

// servingWithout reports whether the VIP is served with m1 down: on one other master
// (VRRP), or routed through others only (BGP).
func (c *cluster) servingWithout(holders []string) bool {
	others := 0
	for _, n := range holders {
		if n != "m1" {
			others++
		}
	}
	if c.spec.BGP {
		return others > 0 && others == len(holders)
	}
	return others == 1
}

// stopVipdFirst is graceful-master for the BGP stack, in the order systemd would stop
// units where vipd is ordered after lbproxy and the apiserver: vipd first (it withdraws the
// route, waits for its grace, closes the sessions and exits), then everything else.
func (c *cluster) stopVipdFirst(m *host, grace time.Duration) {
	c.mu.Lock()
	procs := c.plane[m.Name]
	c.mu.Unlock()
	if n := len(procs); n > 0 {
		vd := procs[n-1]
		vd.Signal(syscall.SIGTERM)
		select {
		case <-vd.Done():
		case <-time.After(grace):
			vd.Signal(syscall.SIGKILL)
			<-vd.Done()
		}
	}
	m.stopGracefully(grace)
}
