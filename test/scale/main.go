// Command scale is hacp's scale bench (issue 39): on three masters in network namespaces it
// runs, one server after the other, hacp's apiserver (embedded 3-member etcd) and upstream
// kube-apiserver (on a 3-member etcd, one member per master), both behind vipd + lbproxy
// with a VIP, with upstream kube-controller-manager and kube-scheduler on every master, kwok
// playing N nodes, a node-agent simulator opening every node's kubelet and kube-proxy
// watches through the VIP, and a ClusterLoader2-style load. At steady load it kills the VIP
// master (SIGSTOP, then SIGKILL of every process) and measures the reconnect storm.
//
// It writes _output/scale/report.json, report.md and latency.png. Run it as root:
// make bench-scale, or go run ./test/scale -nodes 50 -quick.
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
	"slices"
	"strings"
	"syscall"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/certs"
)

// The servers the bench compares.
const (
	serverHACP = "hacp"
	serverKube = "kube-apiserver"
)

var allServers = []string{serverHACP, serverKube}

// The bench's network: its own prefix and /24 inside 10.77.96.0/20, apart from the drill's.
const (
	nsPrefix = "sc-"
	subnet   = "10.77.96"
	vipAddr  = subnet + ".100"
	podCIDR  = "10.77.104.0/21"
)

type options struct {
	nodes       int
	out         string
	servers     []string
	quick       bool
	binDir      string
	podsPerNode int
	keep        bool
	search      []int         // -search: the ladder of N, increasing; nil: one run at -nodes
	stepBudget  time.Duration // -step-budget: a search step not finished in it is not carried
	profile     bool          // -profile: m1's CPU and heap profiles at the start of the steady window, heap profiles near each apiserver's peak
}

// bench is the run-wide state: the hosts, the PKI, the binaries, the clock.
type bench struct {
	opts    options
	dir     string
	net     *hnetns.Net
	masters []*hnetns.Host
	client  *hnetns.Host
	bundle  *certs.Bundle
	bin     map[string]string
	epoch   time.Time
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(b.epoch).Seconds(), fmt.Sprintf(format, args...))
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	var servers, ladder string
	flag.IntVar(&o.nodes, "nodes", 1000, "number of kwok nodes (and simulated node agents)")
	flag.StringVar(&o.out, "out", "_output/scale", "`directory` for report.json, report.md and latency.png")
	flag.StringVar(&servers, "servers", strings.Join(allServers, ","), "comma-separated servers to measure: hacp, kube-apiserver")
	flag.BoolVar(&o.quick, "quick", false, "a tenth of the pods per node and shorter load windows")
	flag.StringVar(&o.binDir, "bin-dir", "bin", "`directory` holding apiserver, vipd, lbproxy and etcd; missing ones are built into it")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's temp dir (data dirs, whole logs)")
	flag.StringVar(&ladder, "search", "", "comma-separated increasing `N`s: measure each server at each N (a fresh stack per step) until the first step it does not carry; -nodes is then unused")
	flag.DurationVar(&o.stepBudget, "step-budget", 20*time.Minute, "with -search: a step (one server at one N) not finished in this `duration` is not carried")
	flag.BoolVar(&o.profile, "profile", false, "fetch m1's apiserver CPU (up to 20 s) and heap profiles at the start of the steady window into <out>/logs/<server>/, and each apiserver's heap profile again whenever its RSS grew 5% (peak-heap-<master>.pprof: the last is near its peak)")
	flag.Parse()
	var err error
	if o.search, err = parseLadder(ladder); err != nil {
		fmt.Fprintf(os.Stderr, "scale: -search: %v\n", err)
		return 2
	}
	o.podsPerNode = 30
	if o.quick {
		o.podsPerNode = 3
	}
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(allServers, s) {
			fmt.Fprintf(os.Stderr, "scale: -servers: unknown %q (want %s)\n", s, strings.Join(allServers, ", "))
			return 2
		}
		o.servers = append(o.servers, s)
	}
	if len(o.servers) == 0 || o.nodes < 1 || o.stepBudget <= 0 {
		fmt.Fprintln(os.Stderr, "scale: need at least one server, one node and a positive -step-budget")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	b := &bench{opts: o, bin: map[string]string{}, epoch: time.Now()}
	if err := b.run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		return 1
	}
	return 0
}

func (b *bench) run(ctx context.Context) (err error) {
	if os.Geteuid() != 0 {
		return errors.New("must run as root (network namespaces, VRRP raw sockets)")
	}
	if err := b.findBinaries(ctx); err != nil {
		return err
	}
	if b.dir, err = os.MkdirTemp("", "hacp-scale-"); err != nil {
		return err
	}
	defer func() {
		if b.opts.keep {
			b.progress("kept %s", b.dir)
			return
		}
		os.RemoveAll(b.dir)
	}()
	hnetns.DeleteAll(nsPrefix)
	if b.net, err = hnetns.Create(nsPrefix, subnet); err != nil {
		return err
	}
	// Everything the bench started dies with it: on return, on a panic, on Ctrl-C.
	defer func() {
		b.progress("tearing down hosts")
		b.net.Destroy()
		hnetns.DeleteAll(nsPrefix)
	}()
	if err := b.buildHosts(); err != nil {
		return err
	}
	var rep *report
	if b.opts.search != nil {
		rep = b.search(ctx)
	} else {
		rep = &report{Nodes: b.opts.nodes, Quick: b.opts.quick, PodsPerNode: b.opts.podsPerNode, Servers: map[string]*serverReport{}}
		for _, name := range b.opts.servers {
			if ctx.Err() != nil {
				break
			}
			rep.Servers[name] = b.measure(ctx, name)
		}
	}
	if err := rep.write(b.opts.out, b.header(rep)); err != nil {
		return err
	}
	b.progress("wrote %s", filepath.Join(b.opts.out, "report.md"))
	return ctx.Err()
}

// buildHosts adds the three masters and the client host, and makes the PKI.
func (b *bench) buildHosts() error {
	for i, name := range []string{"m1", "m2", "m3"} {
		m, err := b.net.CreateHost(name, 11+i)
		if err != nil {
			return err
		}
		b.masters = append(b.masters, m)
	}
	var err error
	if b.client, err = b.net.CreateHost("client", 10); err != nil {
		return err
	}
	hosts := []string{vipAddr}
	for _, m := range b.masters {
		hosts = append(hosts, m.Addr.String())
	}
	b.bundle, err = certs.Ensure(filepath.Join(b.dir, "pki"), certs.Options{Hosts: hosts})
	return err
}

// findBinaries uses -bin-dir's programs and builds the missing ones into it, then finds
// (building once under the upstream directory) the upstream programs.
func (b *bench) findBinaries(ctx context.Context) error {
	pkgs := map[string]string{"apiserver": "./cmd/apiserver", "vipd": "./cmd/vipd", "lbproxy": "./cmd/lbproxy", "etcd": "go.etcd.io/etcd/server/v3"}
	for name, pkg := range pkgs {
		path, err := filepath.Abs(filepath.Join(b.opts.binDir, name))
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			b.progress("building %s", name)
			if out, err := exec.CommandContext(ctx, "go", "build", "-o", path, pkg).CombinedOutput(); err != nil {
				return fmt.Errorf("build %s: %v: %s", name, err, out)
			}
		}
		b.bin[name] = path
	}
	return b.upstreamBinaries(ctx)
}

// header is report.md's text above the tables.
func (b *bench) header(rep *report) string {
	var h strings.Builder
	if rep.Search != nil {
		fmt.Fprintf(&h, "# Scale bench (issue 39): the largest N each server carries, ladder %s\n\n", joinInts(b.opts.search))
	} else {
		fmt.Fprintf(&h, "# Scale bench (issue 39): %d nodes\n\n", rep.Nodes)
	}
	fmt.Fprintf(&h, "Run %s on %d cores; -quick=%v: %d pods per node. Servers ran one after the other on the same three masters (network namespaces on one machine).\n\n",
		b.epoch.UTC().Format(time.RFC3339), numCPU(), b.opts.quick, b.opts.podsPerNode)
	h.WriteString("Each server: three masters, each with its apiserver on its own etcd member (hacp: the apiserver's embedded member; kube-apiserver " + kubeVersion() +
		": an etcd process per master, same Raft timers), vipd + lbproxy with VIP " + vipAddr + " in front of both, upstream kube-controller-manager and kube-scheduler on every master against its own apiserver, kwok on the client host playing the nodes through the VIP (node leases and status heartbeats).\n\n")
	h.WriteString("Node agents: per node a kubelet identity (system:node:NAME) watching its pods (spec.nodeName) and its Node, and a kube-proxy identity (system:kube-proxy) watching Services and EndpointSlices, each on its own connection through the VIP and speaking protobuf as both do by default; the kubelet also watches each Secret and ConfigMap its pods mount (one list-then-watch per object, fieldSelector metadata.name, from the first pod mounting it to the last one's deletion, as 1.37's watch-based managers), and these count among the storm's re-established watches.\n\n")
	h.WriteString("Latencies are the bench's own clients' requests (load generator and node agents' lists) measured client-side through the VIP, in the steady phase before the fault; `recovery` (and the storm's failed requests) is from the fault until every watch is back and every node Lease was renewed after it (at most 90 s). Pod startup: the load generator's pod watch, first seen -> first seen Running (kwok). CPU: user+system seconds of the apiservers and etcd processes of all masters (hacp's apiserver includes its etcd), and beside them those of every other program on the hosts and of the bench itself (what else the machine's cores carried); peak RSS: the largest master's apiserver (+ etcd) VmHWM.\n\n")
	h.WriteString("Storm: SIGSTOP then SIGKILL of every process of the VIP master (m1). `watches re-established`: fault -> every node's watches (pods, Node, Services, EndpointSlices, mounted Secrets and ConfigMaps) reopened and the Service and EndpointSlice created after the fault delivered to it. `Leases stale`: nodes whose Lease renewTime was ever older than 40 s while watched (until every Lease was renewed after the fault). `writes lost`: acknowledged ConfigMap creates missing when read back through a surviving master.\n\n")
	return h.String()
}
