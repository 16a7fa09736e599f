// Command vipd benchmarks failover of vipd against keepalived 2.2.7 in network namespaces,
// in the same run and under the same settings: two routers (priorities 101 and 100) and a
// client on one bridge. The client connects to a TCP service on the VIP every 2 ms; the
// failover time is from the fault to the first connection answered by the new master.
//
// Faults: "hard" stops every process of the master (SIGSTOP, then link down, then SIGKILL,
// so no priority 0 advert escapes); "graceful" sends SIGTERM. Modes: VRRPv3 at 100 ms and
// VRRPv2 (PASS auth) at 1 s. Needs root, ip, nsenter and keepalived. Namespaces "hvb-*",
// addresses 10.77.3.0/24.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	hnetns "github.com/hacp/hacp/internal/netns"
)

const (
	prefix  = "hvb-"
	subnet  = "10.77.3."
	vipAddr = subnet + "100"
	svcPort = "7777"
	status  = "127.0.0.1:9901"
)

var (
	runs    = flag.Int("runs", 5, "failovers per implementation, mode and fault")
	modesF  = flag.String("modes", "v3,v2", "modes to run: v3 (100 ms adverts), v2 (1 s adverts, PASS auth)")
	workDir string
	vipdBin string
)

type mode struct {
	name     string
	version  int
	interval time.Duration
	auth     string
}

var allModes = map[string]mode{
	"v3": {"v3 100ms", 3, 100 * time.Millisecond, ""},
	"v2": {"v2 1s", 2, time.Second, "secret1"},
}

func main() {
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench/vipd: must run as root (network namespaces)")
		os.Exit(2)
	}
	for _, c := range []string{"ip", "nsenter", "keepalived"} {
		if _, err := exec.LookPath(c); err != nil {
			fmt.Fprintf(os.Stderr, "bench/vipd: %s not found\n", c)
			os.Exit(2)
		}
	}
	var err error
	if workDir, err = os.MkdirTemp("", "hvb-"); err != nil {
		die(err)
	}
	vipdBin = filepath.Join(workDir, "vipd")
	if out, err := exec.Command("go", "build", "-o", vipdBin, "github.com/hacp/hacp/cmd/vipd").CombinedOutput(); err != nil {
		die(fmt.Errorf("build vipd: %v: %s", err, out))
	}
	code := 0
	func() {
		defer cleanup()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		go func() { <-sig; cleanup(); os.Exit(1) }()
		if err := bench(); err != nil {
			fmt.Fprintln(os.Stderr, "bench/vipd:", err)
			code = 1
		}
	}()
	os.Exit(code)
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "bench/vipd:", err)
	cleanup()
	os.Exit(1)
}

var hosts = []string{"m1", "m2", "c"}

func octet(h string) int {
	switch h {
	case "m1":
		return 11
	case "m2":
		return 12
	}
	return 50
}

func ns(h string) string { return prefix + h }

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

var (
	cleanOnce  sync.Mutex
	network    *hnetns.Net                 // the bridge and the hosts, once setup has made them
	hostByName = map[string]*hnetns.Host{} // by the names in hosts
)

func cleanup() {
	cleanOnce.Lock()
	defer cleanOnce.Unlock()
	if network != nil {
		network.Destroy()
	}
	if workDir != "" {
		os.RemoveAll(workDir)
	}
}

// setup builds the bridge and the hosts, deleting what an interrupted run left behind.
func setup() error {
	n, err := hnetns.Create(prefix, strings.TrimSuffix(subnet, "."))
	if err != nil {
		return err
	}
	cleanOnce.Lock()
	network = n
	cleanOnce.Unlock()
	for _, h := range hosts {
		if hostByName[h], err = n.CreateHost(h, octet(h)); err != nil {
			return err
		}
	}
	return nil
}

// killAll kills every process in the namespace and waits until they are gone.
func killAll(name string) {
	pids := hnetns.PIDs(name)
	hnetns.Kill(pids)
	waitGone(pids)
}

func waitGone(pids []int) {
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for syscall.Kill(p, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// serve runs a TCP service on the host that answers every connection with the host's name.
func serve(h string) error {
	var ln net.Listener
	if err := hostByName[h].Do(func() (err error) { ln, err = net.Listen("tcp", "0.0.0.0:"+svcPort); return err }); err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(h))
			c.Close()
		}
	}()
	return nil
}

// answer is one successful probe of the VIP.
type answer struct {
	at   time.Time
	host string
}

const probers = 16

// prober connects to the VIP from the client every 2 ms and records who answered; it also
// records the gratuitous ARPs for the VIP and the VRRP adverts the client sees.
type prober struct {
	mu      sync.Mutex
	answers []answer
	garps   []answer // gratuitous ARPs for the VIP seen by the client, by sender MAC
	adverts []answer // VRRP adverts, by source address
}

func (p *prober) run(ctx context.Context) error {
	started := make(chan error, probers+1)
	// Each prober dials with a 30 ms timeout every probers x 2 ms, staggered by 2 ms, so a
	// connection attempt starts every 2 ms even while attempts to a dead host hang.
	for i := range probers {
		go func() {
			_ = hostByName["c"].Do(func() error {
				started <- nil
				time.Sleep(time.Duration(i) * 2 * time.Millisecond)
				d := net.Dialer{Timeout: 30 * time.Millisecond}
				period := probers * 2 * time.Millisecond
				for ctx.Err() == nil {
					t := time.Now()
					c, err := d.Dial("tcp", vipAddr+":"+svcPort)
					if err == nil {
						_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
						b, _ := io.ReadAll(io.LimitReader(c, 8))
						c.Close()
						p.mu.Lock()
						p.answers = append(p.answers, answer{t, string(b)})
						p.mu.Unlock()
					}
					time.Sleep(period - time.Since(t))
				}
				return nil
			})
		}()
	}
	go func() {
		err := hostByName["c"].Do(func() error {
			ifi, err := net.InterfaceByName("eth0")
			if err != nil {
				return err
			}
			pc, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
			if err != nil {
				return err
			}
			started <- nil
			go func() { <-ctx.Done(); pc.Close() }()
			buf := make([]byte, 1500)
			vip := netip.MustParseAddr(vipAddr)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return nil
				}
				at := time.Now()
				var f ethernet.Frame
				if f.UnmarshalBinary(buf[:n]) != nil {
					continue
				}
				if f.EtherType == ethernet.EtherTypeIPv4 && len(f.Payload) >= 20 && f.Payload[9] == 112 {
					src := netip.AddrFrom4([4]byte(f.Payload[12:16]))
					p.mu.Lock()
					p.adverts = append(p.adverts, answer{at, src.String()})
					p.mu.Unlock()
					continue
				}
				var a arp.Packet
				if f.EtherType != ethernet.EtherTypeARP || a.UnmarshalBinary(f.Payload) != nil {
					continue
				}
				if a.SenderIP == vip && a.TargetIP == vip {
					p.mu.Lock()
					p.garps = append(p.garps, answer{at, a.SenderHardwareAddr.String()})
					p.mu.Unlock()
				}
			}
		})
		if err != nil {
			started <- err
		}
	}()
	for range probers + 1 {
		if err := <-started; err != nil {
			return err
		}
	}
	return nil
}

// firstAfter returns the first answer from host after t.
func (p *prober) firstAfter(t time.Time, host string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.answers {
		if a.at.After(t) && a.host == host {
			return a.at, true
		}
	}
	return time.Time{}, false
}

func (p *prober) firstGARP(t time.Time, mac string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.garps {
		if a.at.After(t) && a.host == mac {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// advertCount returns how many adverts from src the client has seen.
func (p *prober) advertCount(src string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, a := range p.adverts {
		if a.host == src {
			n++
		}
	}
	return n
}

func (p *prober) last() answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.answers) == 0 {
		return answer{}
	}
	return p.answers[len(p.answers)-1]
}

func waitFor(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func hasVIP(h string) bool {
	out, _ := exec.Command("ip", "-n", ns(h), "-4", "-o", "addr", "show", "dev", "eth0").Output()
	return strings.Contains(string(out), " "+vipAddr+"/")
}

func macOf(h string) string {
	out, _ := exec.Command("ip", "-n", ns(h), "-o", "link", "show", "dev", "eth0").Output()
	f := strings.Fields(string(out))
	for i, w := range f {
		if w == "link/ether" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// impl starts one router implementation on a host.
type impl interface {
	name() string
	start(h string, prio int, m mode) (*exec.Cmd, error)
	isBackup(h string, cmd *exec.Cmd) bool
}

func startIn(h, logName string, prog string, args ...string) (*exec.Cmd, error) {
	p, err := hostByName[h].Launch(filepath.Join(workDir, logName), prog, args...)
	if err != nil {
		return nil, err
	}
	return p.Cmd, nil
}

type vipdImpl struct{}

func (vipdImpl) name() string { return "vipd" }

func (vipdImpl) start(h string, prio int, m mode) (*exec.Cmd, error) {
	args := []string{"--iface", "eth0", "--vip", vipAddr + "/24", "--vrid", "61", "--priority", strconv.Itoa(prio),
		"--advert-interval", m.interval.String(), "--version-vrrp", strconv.Itoa(m.version), "--check-url", "",
		"--status-addr", status, "--log-level", "warn"}
	if m.auth != "" {
		args = append(args, "--auth-pass", m.auth)
	}
	return startIn(h, "vipd-"+h+".log", vipdBin, args...)
}

func (vipdImpl) isBackup(h string, _ *exec.Cmd) bool {
	st, err := vipdStatus(h)
	return err == nil && len(st.Instances) > 0 && st.Instances[0].State == "BACKUP"
}

type vipdStatusDoc struct {
	Instances []struct {
		State        string `json:"state"`
		LastTakeover *struct {
			AnnounceDelaySeconds float64 `json:"announceDelaySeconds"`
		} `json:"lastTakeover"`
	} `json:"instances"`
}

func vipdStatus(h string) (*vipdStatusDoc, error) {
	var st vipdStatusDoc
	err := hostByName[h].GetJSON(status, "/status", 2*time.Second, &st)
	return &st, err
}

type keepalivedImpl struct{}

func (keepalivedImpl) name() string { return "keepalived" }

func (keepalivedImpl) start(h string, prio int, m mode) (*exec.Cmd, error) {
	dir := filepath.Join(workDir, "ka-"+h)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	auth := ""
	if m.auth != "" {
		auth = fmt.Sprintf("  authentication {\n    auth_type PASS\n    auth_pass %s\n  }\n", m.auth)
	}
	conf := fmt.Sprintf("global_defs {\n  router_id %s\n}\nvrrp_instance VI_1 {\n  state BACKUP\n  interface eth0\n  virtual_router_id 61\n  priority %d\n  advert_int %g\n  version %d\n%s  virtual_ipaddress {\n    %s/24\n  }\n}\n",
		h, prio, m.interval.Seconds(), m.version, auth, vipAddr)
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return startIn(h, "keepalived-"+h+".log", "keepalived", "-n", "-l", "-D", "--vrrp", "-f", path,
		"-p", filepath.Join(dir, "k.pid"), "-r", filepath.Join(dir, "v.pid"), "-c", filepath.Join(dir, "c.pid"))
}

func (keepalivedImpl) isBackup(h string, _ *exec.Cmd) bool {
	data, _ := os.ReadFile(filepath.Join(workDir, "keepalived-"+h+".log"))
	return strings.Contains(string(data), "Entering BACKUP STATE") && !hasVIP(h)
}

// result of one failover.
type result struct {
	failover time.Duration // fault -> first answer from the new master
	garp     time.Duration // fault -> first GARP from the new master seen by the client
	announce time.Duration // vipd only: VIP bound -> first GARP (from /status)
}

// once runs one failover: fresh routers, m1 master, fault, wait for m2 to answer.
func once(im impl, m mode, hard bool, p *prober) (result, error) {
	for _, h := range []string{"m1", "m2"} {
		killAll(ns(h))
		_ = ip("-n", ns("br"), "link", "set", "p-"+h, "up")
		_ = exec.Command("ip", "-n", ns(h), "addr", "del", vipAddr+"/24", "dev", "eth0").Run()
	}
	c1, err := im.start("m1", 101, m)
	if err != nil {
		return result{}, err
	}
	if err := waitFor(20*time.Second, im.name()+" on m1 to hold the VIP", func() bool { return hasVIP("m1") }); err != nil {
		return result{}, err
	}
	c2, err := im.start("m2", 100, m)
	if err != nil {
		return result{}, err
	}
	if err := waitFor(20*time.Second, im.name()+" on m2 to be BACKUP", func() bool { return im.isBackup("m2", c2) }); err != nil {
		return result{}, err
	}
	if err := waitFor(10*time.Second, "client answered by m1", func() bool {
		a := p.last()
		return a.host == "m1" && time.Since(a.at) < 50*time.Millisecond
	}); err != nil {
		return result{}, err
	}
	// Inject the fault right after an advert of m1 reached the client (and so m2): the
	// backup's master down timer then runs its full length, and the phase of the fault
	// within the advert interval does not add noise to the comparison.
	m1addr := subnet + "11"
	n := p.advertCount(m1addr)
	for deadline := time.Now().Add(10 * time.Second); p.advertCount(m1addr) <= n+1; time.Sleep(200 * time.Microsecond) {
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("no advert from m1 seen by the client")
		}
	}

	fault := time.Now()
	if hard {
		pids := hnetns.PIDs(ns("m1"))
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		_ = ip("-n", ns("br"), "link", "set", "p-m1", "down")
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	} else {
		_ = c1.Process.Signal(syscall.SIGTERM)
	}
	if err := waitFor(30*time.Second, "client answered by m2", func() bool { _, ok := p.firstAfter(fault, "m2"); return ok }); err != nil {
		return result{}, err
	}
	at, _ := p.firstAfter(fault, "m2")
	r := result{failover: at.Sub(fault)}
	if g, ok := p.firstGARP(fault, macOf("m2")); ok {
		r.garp = g.Sub(fault)
	}
	if im.name() == "vipd" {
		if st, err := vipdStatus("m2"); err == nil && len(st.Instances) > 0 && st.Instances[0].LastTakeover != nil {
			r.announce = time.Duration(st.Instances[0].LastTakeover.AnnounceDelaySeconds * float64(time.Second))
		}
	}
	return r, nil
}

func rssKB(h string) (vipd int, err error) {
	total := 0
	for _, pid := range hnetns.PIDs(ns(h)) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				f := strings.Fields(line)
				if len(f) >= 2 {
					n, _ := strconv.Atoi(f[1])
					total += n
				}
			}
		}
	}
	return total, nil
}

type stats struct{ min, med, max time.Duration }

func summarize(ds []time.Duration) stats {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return stats{}
	}
	return stats{s[0], s[len(s)/2], s[len(s)-1]}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func bench() error {
	if err := setup(); err != nil {
		return err
	}
	for _, h := range []string{"m1", "m2"} {
		if err := serve(h); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &prober{}
	if err := p.run(ctx); err != nil {
		return err
	}
	impls := []impl{vipdImpl{}, keepalivedImpl{}}
	type key struct {
		mode, fault, impl string
	}
	res := map[key][]result{}
	rss := map[string]int{}
	var order []key
	for _, mn := range strings.Split(*modesF, ",") {
		m, ok := allModes[strings.TrimSpace(mn)]
		if !ok {
			return fmt.Errorf("unknown mode %q", mn)
		}
		for _, hard := range []bool{true, false} {
			fault := "graceful"
			if hard {
				fault = "hard kill"
			}
			for _, im := range impls {
				k := key{m.name, fault, im.name()}
				order = append(order, k)
				for i := 0; i < *runs; i++ {
					r, err := once(im, m, hard, p)
					if err != nil {
						return fmt.Errorf("%s %s %s run %d: %w", im.name(), m.name, fault, i+1, err)
					}
					res[k] = append(res[k], r)
					fmt.Fprintf(os.Stderr, "  %-10s %-8s %-9s run %d: failover %s ms, first GARP at client %s ms\n", im.name(), m.name, fault, i+1, ms(r.failover), ms(r.garp))
					if kb, _ := rssKB("m2"); kb > rss[im.name()] {
						rss[im.name()] = kb
					}
				}
			}
		}
	}
	for _, h := range []string{"m1", "m2"} {
		killAll(ns(h))
	}

	fmt.Printf("\nvipd vs keepalived 2.2.7: failover as seen by a client namespace (fault -> first TCP answer\nfrom the new master on the VIP; client probes every 2 ms; the fault is injected right after an advert\nof the old master), %d runs each, same run and settings. Floor for a hard kill: 3 x interval + skew.\n\n", *runs)
	fmt.Printf("%-9s %-9s %-11s %8s %8s %8s %12s %22s\n", "mode", "fault", "impl", "min ms", "med ms", "max ms", "GARP med ms", "ratio vipd/keepalived")
	for _, k := range order {
		fs, gs := []time.Duration{}, []time.Duration{}
		for _, r := range res[k] {
			fs = append(fs, r.failover)
			gs = append(gs, r.garp)
		}
		s, g := summarize(fs), summarize(gs)
		ratio := ""
		if k.impl == "vipd" {
			other := []time.Duration{}
			for _, r := range res[key{k.mode, k.fault, "keepalived"}] {
				other = append(other, r.failover)
			}
			if o := summarize(other); o.med > 0 {
				ratio = fmt.Sprintf("%.2f", float64(s.med)/float64(o.med))
			}
		}
		fmt.Printf("%-9s %-9s %-11s %8s %8s %8s %12s %22s\n", k.mode, k.fault, k.impl, ms(s.min), ms(s.med), ms(s.max), ms(g.med), ratio)
	}
	var ann []time.Duration
	for k, rs := range res {
		if k.impl == "vipd" {
			for _, r := range rs {
				ann = append(ann, r.announce)
			}
		}
	}
	a := summarize(ann)
	fmt.Printf("\nvipd: VIP bound -> first gratuitous ARP sent (from /status): min %.3f ms, median %.3f ms, max %.3f ms\n",
		float64(a.min)/1e6, float64(a.med)/1e6, float64(a.max)/1e6)
	fmt.Printf("RSS of the new master after takeover (max over runs): vipd %.1f MB, keepalived %.1f MB (parent + VRRP child)\n",
		float64(rss["vipd"])/1024, float64(rss["keepalived"])/1024)
	return nil
}
