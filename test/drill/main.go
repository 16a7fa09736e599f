// Command drill is hacp's failover drill: it builds three masters and a client host from
// network namespaces on one machine, runs the hacp stack (apiserver + lbproxy + vipd) and
// the kubeadm-guide anchor (the same apiservers behind keepalived + haproxy, as the guide
// configures them and again tuned to hacp's timers), injects faults into the master that
// holds the VIP, and measures what a client writing through the VIP feels.
//
// It writes _output/drill/report.json, report.md, timeline.png and the raw event log of
// every scenario, and exits non-zero when hacp loses an acknowledged write, an isolated
// master acknowledges a write, or a split brain outlives one advert interval after a
// partition heals. Run it as root: make drill, or go run ./test/drill --quick.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
)

type options struct {
	scenarios     []string
	stacks        []string
	out           string
	advert        time.Duration
	quick         bool
	binDir        string
	writeInterval time.Duration
	keep          bool
	etcdHeartbeat time.Duration
	etcdElection  time.Duration
	shutdownDelay time.Duration
	pin           bool
	bgpBFD        bool
	bgpStall      bgpStall
	connSync      bool
	controlPlane  bool
	proxyPaths    bool
	vipdArgs      []string // appended to every VRRP-mode vipd's command line (hacp stack)
}

// drill is the run-wide state: the hosts, the PKI, the binaries, the clock.
type drill struct {
	opts    options
	win     windows
	dir     string
	topo    *topology
	masters []*host
	client  *host
	router  *host // hacp-bgp only: FRR's bgpd and zebra
	bundle  *certs.Bundle
	bin     map[string]string
	clk     clock

	// --proxy-paths: the apiservers' kubelet client certificate, and each stack's results.
	kubeletClientCert, kubeletClientKey string
	proxyPaths                          map[string][]pathResult
}

func (d *drill) progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", d.clk.now().Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	var scenarios, stacks string
	flag.StringVar(&scenarios, "scenarios", strings.Join(allScenarios, ","), "comma-separated `list` of scenarios to run: "+strings.Join(allScenarios, ", "))
	flag.StringVar(&stacks, "stacks", strings.Join(allStacks, ","), "comma-separated `list` of stacks: "+strings.Join(allStacks, ", ")+" (or hacp, guide, tuned)")
	flag.StringVar(&o.out, "out", "_output/drill", "`directory` for report.json, report.md, timeline.png, events/ and logs/ (every program's log, the last 2 MiB)")
	flag.DurationVar(&o.advert, "advert-interval", 100*time.Millisecond, "VRRP advert interval of hacp's vipd and of the tuned anchor")
	flag.BoolVar(&o.quick, "quick", false, "shorter recording windows (about half the run time)")
	flag.StringVar(&o.binDir, "bin-dir", "bin", "`directory` holding apiserver, vipd and lbproxy (make build); built into a temp dir when missing")
	flag.DurationVar(&o.writeInterval, "write-interval", 10*time.Millisecond, "least time between the starts of two writes of the client")
	flag.DurationVar(&o.etcdHeartbeat, "etcd-heartbeat-interval", 50*time.Millisecond, "Raft heartbeat of every apiserver's embedded etcd member (all stacks)")
	flag.DurationVar(&o.etcdElection, "etcd-election-timeout", 500*time.Millisecond, "Raft election timeout of every embedded etcd member (all stacks): what a leader dying with its master costs")
	flag.DurationVar(&o.shutdownDelay, "apiserver-shutdown-delay", 0, "every apiserver's --shutdown-delay (all stacks; 0: the apiserver's default, 1s): how long a stopping apiserver fails /healthz before closing its listener, which other masters' balancers need to notice")
	flag.BoolVar(&o.connSync, "lbproxy-sync", true, "hacp stack: lbproxy's connection-table sync between the masters (issue 19; false runs the stack as before it, to compare)")
	flag.BoolVar(&o.pin, "router-pin-connections", true, "hacp-bgp: the router keeps each established connection on the master its first packet went to (conntrack mark + fwmark rules, needs nft from Debian's nftables) instead of rehashing it when the ECMP route changes")
	flag.BoolVar(&o.bgpBFD, "bgp-bfd", true, "hacp-bgp: BFD (100ms x 3) between every vipd and the router's FRR bfdd, so a crashed master's route goes in 0.3 s instead of the hold timer's 9 s (false runs the stack as before BFD, to compare)")
	flag.BoolVar(&o.controlPlane, "control-plane", true, "hacp, keepalived+haproxy stacks: run kube-controller-manager and kube-scheduler 1.33 on every master against its own apiserver and kwok's fake nodes on the client; kill-master also measures their Lease takeover and a scale-up after the fault (the upstream programs are built once into _output/upstream)")
	flag.BoolVar(&o.proxyPaths, "proxy-paths", true, "with --control-plane: before the faults, use every proxy subresource (pods/log -f, exec, exec -i, attach, portforward, pods/proxy, nodes/proxy, services/proxy, to kwok's node server on the client) and an aggregated API (sample-apiserver on the client, registered by an APIService) through the VIP with kubectl, and during the scenarios watch and create its flunders through the VIP (issue 22); a failed path fails the drill")
	var stall string
	flag.StringVar(&stall, "bgp-stall", "", "hacp-bgp kill-master: `who:duration`, vipd:400ms or bfdd:500ms: 1 s after the crash, SIGSTOP m2's and m3's vipd, or the router's bfdd, for that long, which BFD at 100ms x 3 takes for a failure (a false BFD Down, as a host starved of CPU causes)")
	var vipdArgs string
	flag.StringVar(&vipdArgs, "vipd-args", "", "hacp stack: extra `flags` for every vipd, space-separated, after the drill's own (so they override them), e.g. \"--check-url https://127.0.0.1:8443/healthz\" to check through the local lbproxy, or \"--nopreempt\"")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's temp dir (configs, data, whole logs) instead of deleting it")
	flag.Parse()
	o.vipdArgs = strings.Fields(vipdArgs)
	var err error
	if o.bgpStall, err = parseBGPStall(stall); err != nil {
		fmt.Fprintf(os.Stderr, "drill: --bgp-stall: %v\n", err)
		return 2
	}
	if o.scenarios, err = parseList(scenarios, allScenarios, nil); err != nil {
		fmt.Fprintf(os.Stderr, "drill: --scenarios: %v\n", err)
		return 2
	}
	aliases := map[string]string{"guide": stackAnchor, "anchor": stackAnchor, "tuned": stackAnchorTuned}
	if o.stacks, err = parseList(stacks, allStacks, aliases); err != nil {
		fmt.Fprintf(os.Stderr, "drill: --stacks: %v\n", err)
		return 2
	}
	if o.advert <= 0 {
		fmt.Fprintln(os.Stderr, "drill: --advert-interval must be positive")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d := &drill{opts: o, win: defaultWindows(o.quick), clk: clock{epoch: time.Now()}, proxyPaths: map[string][]pathResult{}}
	code, err := d.run(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "drill: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// parseList splits a comma-separated list and checks every entry against known, in the
// order of known.
func parseList(s string, known []string, aliases map[string]string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, ok := aliases[f]; ok {
			f = a
		}
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("unknown %q (want one of %s)", f, strings.Join(known, ", "))
		}
		want[f] = true
	}
	var out []string
	for _, k := range known {
		if want[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func (d *drill) run(ctx context.Context) (code int, err error) {
	bgp, err := d.checkTools()
	if err != nil {
		return 2, err
	}
	if d.dir, err = os.MkdirTemp("", "hacp-drill-"); err != nil {
		return 1, err
	}
	defer func() {
		// After the hosts' teardown (deferred later, so run first): every log is complete.
		if err := keepLogs(d.dir, d.opts.out, d.clk.epoch); err != nil {
			d.progress("keeping the logs: %v", err)
		}
		if d.opts.keep {
			d.progress("kept %s", d.dir)
			return
		}
		os.RemoveAll(d.dir)
	}()
	if code, err := d.prepareBinaries(ctx); err != nil {
		return code, err
	}

	d.progress("building hosts %s{br,m1,m2,m3,client} on %s.0/24, VIP %s", nsPrefix, subnet, vipAddr)
	if d.topo, err = newTopology(d.dir, nsPrefix); err != nil {
		return 1, err
	}
	// Everything the drill started dies with it: on return, on a panic, on Ctrl-C.
	defer func() {
		if r := recover(); r != nil {
			d.topo.destroy()
			panic(r)
		}
		d.progress("tearing down hosts")
		d.topo.destroy()
	}()
	if err := d.buildHosts(bgp); err != nil {
		return 1, err
	}

	rep, tl, failures, stackErrs := d.runStacks(ctx)
	rep.ProxyPaths = d.proxyPaths
	failures = append(failures, proxyPathFailures(d.proxyPaths)...)
	if err := d.writeOutputs(rep, tl, failures, stackErrs); err != nil {
		return 1, err
	}
	for _, f := range failures {
		fmt.Fprintf(os.Stderr, "drill: FAIL: %s\n", f)
	}
	switch {
	case ctx.Err() != nil:
		return 130, errors.New("interrupted")
	case len(stackErrs) > 0:
		return 1, errors.Join(stackErrs...)
	case len(failures) > 0:
		return 1, nil
	}
	d.progress("done: %s", filepath.Join(d.opts.out, "report.md"))
	return 0, nil
}

// checkTools checks that the drill runs as root and that the programs the chosen stacks
// need are on PATH, and reports whether a stack needs the BGP router.
func (d *drill) checkTools() (bgp bool, err error) {
	if os.Geteuid() != 0 {
		return false, errors.New("must run as root (network namespaces, VRRP raw sockets)")
	}
	need := []string{"ip", "nsenter"}
	for _, s := range d.opts.stacks {
		switch s {
		case stackHACP:
		case stackHACPBGP:
			bgp = true
			need = append(need, frrZebra, frrBGPd)
			if d.opts.bgpBFD {
				need = append(need, frrBFDd, "vtysh")
			}
			if d.opts.pin {
				need = append(need, "nft")
			}
		default:
			need = append(need, "keepalived", "haproxy", "curl")
		}
	}
	for _, c := range need {
		if _, err := exec.LookPath(c); err != nil {
			return bgp, fmt.Errorf("%s not found on PATH", c)
		}
	}
	return bgp, nil
}

// prepareBinaries finds or builds the programs the drill runs, and returns the exit code
// that goes with an error.
func (d *drill) prepareBinaries(ctx context.Context) (code int, err error) {
	if err := d.findBinaries(ctx); err != nil {
		return 1, err
	}
	if !d.opts.controlPlane {
		d.opts.proxyPaths = false // they need kwok's nodes
	}
	if d.opts.proxyPaths {
		if _, err := exec.LookPath("kubectl"); err != nil {
			return 2, errors.New("kubectl not found on PATH (needed by --proxy-paths)")
		}
	}
	if d.opts.controlPlane {
		if err := d.upstreamBinaries(ctx); err != nil {
			return 1, err
		}
	}
	return 0, nil
}

// buildHosts adds the masters, the client and (for a BGP stack) the router to the
// topology, and makes the certificates for the addresses they serve on.
func (d *drill) buildHosts(bgp bool) error {
	var err error
	for i, name := range []string{"m1", "m2", "m3"} {
		m, err := d.topo.addHost(name, 11+i)
		if err != nil {
			return err
		}
		d.masters = append(d.masters, m)
	}
	if d.client, err = d.topo.addHost("client", 10); err != nil {
		return err
	}
	if bgp {
		if d.router, err = d.topo.addRouter(d.client); err != nil {
			return err
		}
		if d.opts.pin {
			if err := d.router.pinConnections(d.masters, d.client); err != nil {
				return err
			}
		}
	}
	hosts := []string{vipAddr, bgpVIPAddr}
	for _, m := range d.masters {
		hosts = append(hosts, m.Addr.String())
	}
	if d.opts.proxyPaths {
		// The same serving certificate for kwok's node server and sample-apiserver on the
		// client, verified by the apiservers with the drill's CA.
		hosts = append(hosts, d.client.Addr.String(), sampleServerName)
	}
	if d.bundle, err = certs.Ensure(filepath.Join(d.dir, "pki"), certs.Options{Hosts: hosts}); err != nil {
		return err
	}
	if d.opts.proxyPaths {
		if err := d.writeKubeletClientCert(); err != nil {
			return err
		}
	}
	return nil
}

// runStacks runs every chosen stack's scenarios in turn and gathers the report, the
// timeline, the failed judgements and the stacks' errors.
func (d *drill) runStacks(ctx context.Context) (rep *report, tl timeline, failures []string, stackErrs []error) {
	rep = newReport()
	tl = timeline{}
	for _, name := range d.opts.stacks {
		if ctx.Err() != nil {
			break
		}
		spec := d.stackSpec(name)
		results, err := d.runStack(ctx, spec)
		for sc, r := range results {
			rep.set(name, sc, r.Metrics)
			if r.Leader != "" {
				rep.setLeader(name, sc, r.Leader)
			}
			var acks []float64
			for _, q := range r.Log.Requests {
				if q.OK {
					acks = append(acks, (q.End - r.Log.Fault).Seconds())
				}
			}
			tl.add(sc, name, acks)
			failures = append(failures, judge(spec, sc, r.Metrics)...)
		}
		if err != nil {
			d.progress("%s: %v", name, err)
			stackErrs = append(stackErrs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return rep, tl, failures, stackErrs
}

// judge returns the drill's hard failures for one scenario's metrics.
func judge(spec stackSpec, scenario string, m metrics) []string {
	var out []string
	if spec.HACP && m.WritesLost > 0 {
		out = append(out, fmt.Sprintf("%s %s: %d acknowledged writes lost", spec.Name, scenario, m.WritesLost))
	}
	if m.IsolatedWrites != nil && *m.IsolatedWrites > 0 {
		out = append(out, fmt.Sprintf("%s %s: the isolated master acknowledged %d writes", spec.Name, scenario, *m.IsolatedWrites))
	}
	if spec.HACP && m.SplitBrainAfterHeal != nil && *m.SplitBrainAfterHeal > spec.Advert.Seconds() {
		out = append(out, fmt.Sprintf("%s %s: split brain for %.3fs after the heal, more than one advert interval (%v)", spec.Name, scenario, *m.SplitBrainAfterHeal, spec.Advert))
	}
	return out
}

// runStack brings one stack up and runs the selected scenarios on it; results so far are
// returned even when a later step fails.
func (d *drill) runStack(ctx context.Context, spec stackSpec) (map[string]*scenarioResult, error) {
	results := map[string]*scenarioResult{}
	c, err := d.newCluster(spec)
	if err != nil {
		return results, err
	}
	defer c.stop()
	d.progress("%s: starting 3 apiservers (embedded etcd) and %s on m1..m3", spec.Name, c.planeName())
	if err := c.start(ctx); err != nil {
		return results, err
	}
	d.progress("%s: settled, VIP on m1", spec.Name)
	for _, sc := range d.opts.scenarios {
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		start := time.Now()
		r, err := c.runScenario(ctx, sc)
		if err != nil {
			return results, fmt.Errorf("%s: %w", sc, err)
		}
		results[sc] = r
		d.progress("%s %s: done in %.1fs", spec.Name, sc, time.Since(start).Seconds())
	}
	return results, nil
}

// findBinaries uses --bin-dir when it holds all three programs, and otherwise builds them.
func (d *drill) findBinaries(ctx context.Context) error {
	d.bin = map[string]string{}
	progs := []string{"apiserver", "vipd", "lbproxy"}
	all := true
	for _, p := range progs {
		path, err := filepath.Abs(filepath.Join(d.opts.binDir, p))
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			all = false
		}
		d.bin[p] = path
	}
	if all {
		return nil
	}
	out := filepath.Join(d.dir, "bin")
	d.progress("building %s into %s", strings.Join(progs, ", "), out)
	args := []string{"build", "-o", out + "/"}
	for _, p := range progs {
		args = append(args, "./cmd/"+p)
		d.bin[p] = filepath.Join(out, p)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w (run make build, or pass --bin-dir)", err)
	}
	return nil
}

func (d *drill) writeOutputs(rep *report, tl timeline, failures []string, stackErrs []error) error {
	var h strings.Builder
	fmt.Fprintf(&h, "Run %s on %d CPUs (%s/%s), %s mode. Masters m1..m3 = %s.11-13, client %s.10, VIP %s:%d.\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, map[bool]string{true: "quick", false: "full"}[d.opts.quick],
		subnet, subnet, vipAddr, lbPort)
	h.WriteString("Stacks (the same apiserver binary with its embedded 3-member etcd in every stack):\n\n")
	for _, s := range d.opts.stacks {
		spec := d.stackSpec(s)
		fmt.Fprintf(&h, "- **%s**: %s\n", s, spec.describe())
	}
	if slices.Contains(d.opts.stacks, stackHACPBGP) {
		fmt.Fprintf(&h, "\n**hacp-bgp** runs on the same hosts, but the client reaches its VIP %s:%d only through the router %s (a route to %s.0/24 via it), which learns the VIP's /32 from the three vipd over eBGP. "+
			"There, `vip_failover_s` is fault -> the router's kernel route to the VIP no longer through m1 (rejoin: through m1 again) and a TLS handshake through the VIP completed; "+
			"`split_brain_s` is 0 by construction (every healthy master holds the VIP: anycast), and `client_arp_stale_s` does not apply. "+
			"A crashed or cut-off master keeps its share of the connections until the router notices: its bfdd after %v x %d without vipd's BFD packets (vipd's own BFD, RFC 5880; GoBGP has none), or without BFD (--bgp-bfd=false) its hold timer (%v); the anchor is kube-vip's BGP mode, whose users measure 15-18 s with its default timers.\n",
			bgpVIPAddr, lbPort, routerAddr, strings.TrimSuffix(bgpVIPAddr, ".100"), bgpStack().BFDInterval, bgpStack().BFDMultiplier, bgpStack().HoldTime)
	}
	fmt.Fprintf(&h, "\netcd (every stack): embedded 3-member cluster, heartbeat %v, election timeout %v (tuned for masters on one LAN; etcd's defaults are 100ms / 1s).\n", d.opts.etcdHeartbeat, d.opts.etcdElection)
	if len(d.opts.vipdArgs) > 0 {
		fmt.Fprintf(&h, "\nvipd (hacp): extra flags %q.\n", strings.Join(d.opts.vipdArgs, " "))
	}
	if st := d.opts.bgpStall; st.who != "" {
		fmt.Fprintf(&h, "\nhacp-bgp kill-master (--bgp-stall): %v after the crash, %s stopped for %v (a false BFD Down).\n", stallDelay, map[string]string{"vipd": "m2's and m3's vipd", "bfdd": "the router's bfdd"}[st.who], st.dur)
	}
	if d.opts.shutdownDelay > 0 {
		fmt.Fprintf(&h, "\napiserver (every stack): --shutdown-delay %v.\n", d.opts.shutdownDelay)
	}
	fmt.Fprintf(&h, "\nClient: one writer through the VIP with client-go creating ConfigMaps and, between creates, updating (PUT with the last resourceVersion), merge-patching and deleting them, one request at a time, each on a new connection, %v timeout, at most one every %v; plus a client-go informer (HTTP/2, one connection) through the VIP.\n\n", requestTimeout, d.opts.writeInterval)
	h.WriteString("Metrics: `vip_failover_s` fault -> VIP on one reachable other master (rejoin: back on m1) and a TLS handshake through it completed (one started every 50 ms, 1 s patience; `never`: the VIP did not move); " +
		"`api_downtime_s` longest gap between two acknowledged writes; `failed_requests` and `last_failure_s` writes that failed or timed out after the fault and when the last one ended; " +
		"`watch_gap_s` how long the informer's watch left new data undelivered after the fault: fault -> first informer event for an object written after the fault, or the longest delay from such a write's start to its event if larger (`never`: nothing written after the fault delivered within the recording window); `split_brain_s` time two reachable hosts claimed the VIP (bound and not deprecated; vipd deprecates a VIP it is handing over); `handover_overlap_s` time a master handing the VIP over (deprecated) and another both had it bound (make-before-break); " +
		"`writes_lost` acknowledged writes whose effect is missing when read back from m2 (a created object, an update's or patch's value, a deleted object gone); `isolated_writes_accepted` writes m1's own apiserver acknowledged while cut off; " +
		"`vip_before_healthy_s` (rejoin) time the VIP sat on m1 before m1's own apiserver answered /healthz; " +
		"`client_arp_stale_s` time the VIP sat on one reachable master while the client's neighbour entry for it still named another (a gratuitous ARP the client did not take). " +
		"The fault always hits m1, the VIP holder. Raw event logs: events/*.json (times in ns since the drill started); every program's log: logs/ (logs/clock.txt: when the drill started).\n\n")
	if d.opts.proxyPaths {
		h.WriteString("Issue 22 (`--proxy-paths`, the stacks that run the control plane): before the faults, kubectl in the client's namespace uses every proxy subresource through the VIP (kwok's node server on the client at " + d.client.Addr.String() + ":" + fmt.Sprint(kubeletPort) + " plays the kubelets; an HTTP server there is the pod and Service backend) and an aggregated API (k8s.io/sample-apiserver on the client with its own etcd, registered by an APIService): see the proxy-path table. " +
			"During every scenario a second writer creates a flunder through the VIP every 100 ms (new connection each, 1 s timeout) and a client-go dynamic informer (HTTP/2) watches flunders through the VIP: `flunder_watch_gap_s` is `watch_gap_s` for it, `flunders_unseen` the acknowledged flunders the informer had not reported 30 s after recording ended.\n\n")
	}
	if len(failures) > 0 {
		h.WriteString("**FAILED:**\n\n")
		for _, f := range failures {
			fmt.Fprintf(&h, "- %s\n", f)
		}
		h.WriteString("\n")
	}
	if len(stackErrs) > 0 {
		h.WriteString("**Not completed:**\n\n")
		for _, e := range stackErrs {
			fmt.Fprintf(&h, "- %s\n", strings.SplitN(e.Error(), "\n", 2)[0])
		}
		h.WriteString("\n")
	}
	if err := rep.write(d.opts.out, h.String()); err != nil {
		return err
	}
	png, err := tl.plotPNG()
	if err != nil {
		d.progress("timeline: %v", err)
		return nil
	}
	return os.WriteFile(filepath.Join(d.opts.out, "timeline.png"), png, 0o644)
}

// stackSpec is the named stack as this run's flags configure it.
func (d *drill) stackSpec(name string) stackSpec {
	spec := stackSpecs(d.opts.advert)[name]
	if !d.opts.connSync {
		spec.ConnSync = false
	}
	if !d.opts.bgpBFD {
		spec.BFDInterval, spec.BFDMultiplier = 0, 0
	}
	return spec
}
