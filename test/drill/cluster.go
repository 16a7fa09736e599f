package main

import (
	"context"
	"fmt"
	hnetns "github.com/hacp/hacp/internal/netns"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"
)

// cluster is one stack running on the three masters: a fresh 3-member etcd cluster inside
// the apiservers, and the stack's VIP daemon and balancer on every master.
type cluster struct {
	d    *drill
	spec stackSpec
	dir  string

	mu    sync.Mutex
	api   map[string]*proc   // master name -> apiserver
	plane map[string][]*proc // master name -> VIP daemon and balancer
	watch []watchEvent       // everything the informer delivered
	down  map[string]string  // master name -> what is stopped ("host", "apiserver")

	settles int // makes the names of settle writes unique

	frr    []*proc // hacp-bgp: zebra and bgpd in the router namespace
	frrDir string

	stopInformer context.CancelFunc
	writes       *kubernetes.Clientset // connection-per-request client through the VIP

	// --control-plane: kwok on the client, and an admin client through the VIP.
	kwok *proc
	cp   *kubernetes.Clientset

	// --proxy-paths: the backends, sample-apiserver and the flunder informer.
	ext *extensions
}

func (d *drill) newCluster(spec stackSpec) (*cluster, error) {
	dir := filepath.Join(d.dir, strings.NewReplacer("+", "-", "(", "-", ")", "").Replace(spec.Name))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &cluster{d: d, spec: spec, dir: dir, api: map[string]*proc{}, plane: map[string][]*proc{}, down: map[string]string{}, ext: &extensions{}}, nil
}

func (c *cluster) master(name string) *host {
	for _, m := range c.d.masters {
		if m.Name == name {
			return m
		}
	}
	panic("no master " + name)
}

func (c *cluster) index(m *host) int { return slices.Index(c.d.masters, m) }

func peerURL(m *host) string { return fmt.Sprintf("http://%s:2380", m.Addr) }

// apiserverArgs is the command line of the apiserver on m, with its embedded etcd member
// in a 3-member cluster over the master addresses.
func (c *cluster) apiserverArgs(m *host, state string) []string {
	var initial []string
	for _, o := range c.d.masters {
		initial = append(initial, o.Name+"="+peerURL(o))
	}
	b := c.d.bundle
	var extra []string
	delay := c.d.opts.shutdownDelay
	if delay == 0 {
		delay = c.spec.ShutdownDelay
	}
	if delay > 0 {
		extra = []string{"--shutdown-delay", delay.String()}
	}
	if c.withProxyPaths() {
		extra = append(extra, c.proxyAPIServerArgs()...)
	}
	return append([]string{
		"--bind-address", "0.0.0.0",
		"--secure-port", fmt.Sprint(apiPort),
		"--data-dir", filepath.Join(c.dir, m.Name, "data"),
		"--tls-cert-file", b.ServingCert,
		"--tls-private-key-file", b.ServingKey,
		"--client-ca-file", b.CACert,
		// One ServiceAccount key for the three, as a real HA control plane shares it.
		"--service-account-signing-key-file", b.ServiceAccountKey,
		"--write-kubeconfig", "-",
		"--etcd-name", m.Name,
		"--etcd-initial-cluster", strings.Join(initial, ","),
		"--etcd-initial-cluster-state", state,
		"--etcd-listen-peer-urls", peerURL(m),
		"--etcd-heartbeat-interval", c.d.opts.etcdHeartbeat.String(),
		"--etcd-election-timeout", c.d.opts.etcdElection.String(),
	}, extra...)
}

// startAPIServer starts the apiserver on m; state is "new" for the first start of the
// cluster and "existing" when a member comes back with its data.
func (c *cluster) startAPIServer(m *host, state string) error {
	p, err := m.start(c.d.bin["apiserver"], c.apiserverArgs(m, state)...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.api[m.Name] = p
	c.mu.Unlock()
	return nil
}

// startPlane starts the stack's VIP daemon and balancer on m.
func (c *cluster) startPlane(m *host) error {
	i := c.index(m)
	var procs []*proc
	if c.spec.HACP {
		var lbArgs []string
		lbArgs = append(lbArgs, "--listen", fmt.Sprintf(":%d", lbPort), "--check-ca", c.d.bundle.CACert)
		for _, o := range c.d.masters {
			lbArgs = append(lbArgs, "--backend", fmt.Sprintf("%s:%d", o.Addr, apiPort))
		}
		if g := c.spec.DownSessionGrace; g > 0 {
			lbArgs = append(lbArgs, "--down-session-grace", g.String())
		}
		if c.spec.ConnSync {
			// Issue 19: the lbproxies share their connection tables over the masters'
			// bridge, so that the master taking the VIP over from a crashed or cut-off
			// one resets that master's clients at once.
			lbArgs = append(lbArgs, "--sync-listen", fmt.Sprintf("%s:%d", m.Addr, syncPort))
			for _, o := range c.d.masters {
				if o != m {
					lbArgs = append(lbArgs, "--sync-peer", fmt.Sprintf("%s:%d", o.Addr, syncPort))
				}
			}
		}
		lb, err := m.start(c.d.bin["lbproxy"], lbArgs...)
		if err != nil {
			return err
		}
		procs = append(procs, lb)
		if err := c.waitBalancer(m); err != nil {
			return err
		}
		vd, err := c.startVipd(m)
		if err != nil {
			return err
		}
		procs = append(procs, vd)
	} else {
		dir := filepath.Join(c.dir, m.Name, "anchor")
		kaConf, haConf, err := c.spec.renderAnchor(dir, i, m, c.d.masters)
		if err != nil {
			return err
		}
		ha, err := m.start("haproxy", "-db", "-f", haConf)
		if err != nil {
			return err
		}
		procs = append(procs, ha)
		if err := c.waitBalancer(m); err != nil {
			return err
		}
		ka, err := m.start("keepalived", "--dont-fork", "--log-console", "--log-detail", "--vrrp",
			"--use-file", kaConf,
			"--pid", filepath.Join(dir, "keepalived.pid"),
			"--vrrp_pid", filepath.Join(dir, "vrrp.pid"),
			"--checkers_pid", filepath.Join(dir, "checkers.pid"))
		if err != nil {
			return err
		}
		procs = append(procs, ka)
	}
	c.mu.Lock()
	c.plane[m.Name] = procs
	c.mu.Unlock()
	return nil
}

// startVipd starts the hacp stack's vipd on m.
func (c *cluster) startVipd(m *host) (*proc, error) {
	i := c.index(m)
	vipArgs := c.vipdBGPArgs()
	if !c.spec.BGP {
		vipArgs = []string{
			"--iface", m.Iface,
			"--vip", vipAddr + "/24",
			"--vrid", fmt.Sprint(vrid),
			"--priority", fmt.Sprint(priorities[i]),
			"--advert-interval", c.spec.Advert.String(),
			// Through the local lbproxy, vipd's default: a dead local apiserver is routed
			// around, not moved for (issue 19).
			"--check-url", fmt.Sprintf("https://127.0.0.1:%d/healthz", lbPort),
			"--check-ca-file", c.d.bundle.CACert,
		}
		vipArgs = append(vipArgs, c.d.opts.vipdArgs...)
	}
	return m.start(c.d.bin["vipd"], vipArgs...)
}

// noPreempt reports whether the hacp stack's vipd runs with --nopreempt: a master that comes
// back does not take the VIP back, so the drill moves it to m1 (a planned handover) before
// the next scenario.
func (c *cluster) noPreempt() bool {
	return c.spec.HACP && !c.spec.BGP && slices.Contains(c.d.opts.vipdArgs, "--nopreempt")
}

// moveVIPToM1 hands the VIP from its holder to m1 by restarting the holder's vipd (SIGTERM:
// make-before-break; m1 has the highest priority, so the shortest skew time).
func (c *cluster) moveVIPToM1(ctx context.Context) error {
	h := c.holders()
	if len(h) != 1 || h[0] == "m1" {
		return nil
	}
	m := c.master(h[0])
	c.mu.Lock()
	procs := c.plane[m.Name]
	c.mu.Unlock()
	if len(procs) == 0 {
		return fmt.Errorf("%s: no vipd on %s", c.spec.Name, m.Name)
	}
	vd := procs[len(procs)-1]
	c.d.progress("%s: moving the VIP from %s to m1 (restarting %s's vipd)", c.spec.Name, m.Name, m.Name)
	vd.Signal(syscall.SIGTERM)
	select {
	case <-vd.Done():
	case <-time.After(20 * time.Second):
		vd.Signal(syscall.SIGKILL)
		<-vd.Done()
	}
	nvd, err := c.startVipd(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.plane[m.Name] = append(procs[:len(procs)-1:len(procs)-1], nvd)
	c.mu.Unlock()
	return nil
}

// waitBalancer waits until the balancer on m completes TLS handshakes (with some
// apiserver behind it), so that the VIP daemon, started next, does not begin with a
// failing check: the guide's check goes through the local haproxy.
func (c *cluster) waitBalancer(m *host) error {
	addr := fmt.Sprintf("%s:%d", m.Addr, lbPort)
	if err := poll(context.Background(), 15*time.Second, func() bool {
		return c.d.tlsAnswers(context.Background(), addr, 500*time.Millisecond)
	}); err != nil {
		return fmt.Errorf("%s: balancer on %s does not answer: %w%s", c.spec.Name, addr, err, c.procTails())
	}
	return nil
}

// start brings the stack up from nothing and waits until it is settled.
func (c *cluster) start(ctx context.Context) error {
	for _, m := range c.d.masters {
		if err := c.startAPIServer(m, "new"); err != nil {
			return err
		}
	}
	if err := c.waitAPIServers(ctx, c.d.masters, 90*time.Second); err != nil {
		return err
	}
	c.d.progress("%s: apiservers healthy", c.spec.Name)
	if c.spec.BGP {
		procs, err := c.startFRR()
		c.frr = procs
		if err != nil {
			return fmt.Errorf("%s: FRR: %w", c.spec.Name, err)
		}
	}
	for _, m := range c.d.masters {
		if err := c.startPlane(m); err != nil {
			return err
		}
	}
	var err error
	c.writes, err = newConnPerRequest(c.d.bundle, c.d.client, c.vipURL())
	if err != nil {
		return err
	}
	if err := c.waitSettled(ctx, 60*time.Second); err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(ctx)
	c.stopInformer = cancel
	inf, err := startInformer(ictx, c.d.clk, c.d.bundle, c.d.client, c.vipURL(), func(e watchEvent) {
		c.mu.Lock()
		c.watch = append(c.watch, e)
		c.mu.Unlock()
	})
	if err != nil {
		return err
	}
	if err := poll(ctx, 30*time.Second, inf.HasSynced); err != nil {
		return fmt.Errorf("%s: informer did not sync through the VIP: %w", c.spec.Name, err)
	}
	if c.withControlPlane() {
		if err := c.startUpstream(ctx); err != nil {
			return err
		}
	}
	if c.withProxyPaths() {
		// Issue 22's proof: a failed path is reported (and fails the drill) but the faults
		// still run.
		res := c.checkProxyPaths(ctx)
		if c.ext.flunders {
			r := pathResult{Path: "flunder informer through the VIP", Attempts: 1}
			if err := c.startFlunderInformer(ctx); err != nil {
				c.ext.flunders = false
				r.Error = err.Error()
			}
			r.OK = r.Error == ""
			res = append(res, r)
		}
		c.d.proxyPaths[c.spec.Name] = res
	}
	return nil
}

// stop kills everything the stack started and removes VIPs left on the masters, so the
// next stack starts on clean hosts.
func (c *cluster) stop() {
	if c.stopInformer != nil {
		c.stopInformer()
	}
	c.ext.stop()
	if c.kwok != nil {
		c.kwok.Signal(syscall.SIGKILL)
		<-c.kwok.Done()
	}
	for _, m := range c.d.masters {
		m.killAll()
		m.waitProcs(5 * time.Second)
		_ = m.SwitchLink(true)
		_ = runIP("-n", m.NS, "addr", "del", vipAddr+"/24", "dev", m.Iface)
		_ = runIP("-n", m.NS, "addr", "del", bgpVIPAddr+"/32", "dev", "lo")
	}
	for _, p := range c.frr {
		p.Signal(syscall.SIGKILL)
		<-p.Done()
	}
	if c.frrDir != "" {
		os.RemoveAll(c.frrDir)
	}
}

func apiURL(m *host) string { return fmt.Sprintf("https://%s:%d", m.Addr, apiPort) }

// waitAPIServers waits until every listed apiserver answers /healthz 200 from the client.
func (c *cluster) waitAPIServers(ctx context.Context, ms []*host, timeout time.Duration) error {
	hc := healthClient(c.d.bundle, c.d.client, time.Second)
	err := poll(ctx, timeout, func() bool {
		for _, m := range ms {
			if !healthy(ctx, hc, apiURL(m)+"/healthz") {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("%s: apiservers not healthy: %w%s", c.spec.Name, err, c.procTails())
	}
	return nil
}

// holders returns the masters that have the VIP configured; for the BGP stack, where every
// healthy master has it, the masters the router routes it through.
func (c *cluster) holders() []string {
	if c.spec.BGP {
		return c.routedTo()
	}
	var out []string
	vip := netip.MustParseAddr(vipAddr)
	for _, m := range c.d.masters {
		if m.holdsAddr(vip) {
			out = append(out, m.Name)
		}
	}
	return out
}

// waitSettled waits until every apiserver is healthy, the VIP sits on m1 alone, and ten
// writes in a row through the VIP succeed, each on a new connection (so every balancer
// backend has been used).
func (c *cluster) waitSettled(ctx context.Context, timeout time.Duration) error {
	if err := c.waitAPIServers(ctx, c.d.masters, timeout); err != nil {
		return err
	}
	// The VIP must stay on m1 for three advert intervals (at least a second): a check
	// that fails once at start-up moves it away and back.
	stable := max(3*c.spec.Advert, time.Second)
	var since time.Time
	if err := poll(ctx, timeout, func() bool {
		if h := c.holders(); !c.settled(h) {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= stable
	}); err != nil {
		return fmt.Errorf("%s: VIP not settled (holders %v): %w%s", c.spec.Name, c.holders(), err, c.procTails())
	}
	if c.spec.BGP && c.spec.BFDInterval > 0 {
		// vipd starts BFD once its BGP session is up: a fault before that would measure
		// the hold timer.
		if err := poll(ctx, timeout, c.bfdUp); err != nil {
			return fmt.Errorf("%s: the router's BFD sessions with the masters did not come up: %w%s", c.spec.Name, err, c.procTails())
		}
	}
	var nsErr error
	if err := poll(ctx, timeout, func() bool { nsErr = ensureNamespace(ctx, c.writes); return nsErr == nil }); err != nil {
		return fmt.Errorf("%s: create namespace %s: %w (last: %v)", c.spec.Name, drillNamespace, err, nsErr)
	}
	n := 0
	var last request
	err := poll(ctx, timeout, func() bool {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ok := true
		writer(sctx, c.d.clk, c.writes, c.settleRun(), 0, func(q request) {
			last = q
			if q.OK {
				n++
			} else {
				n, ok = 0, false
			}
			if n >= 10 || !ok {
				cancel()
			}
		}, nil)
		return ok && n >= 10
	})
	if err != nil {
		return fmt.Errorf("%s: writes through the VIP do not succeed (last: %s): %w%s", c.spec.Name, last.Err, err, c.procTails())
	}
	return nil
}

// settleRun returns a fresh object name prefix for writes that only check the cluster.
func (c *cluster) settleRun() string {
	c.settles++
	return fmt.Sprintf("settle-%s-%d", shortName(c.spec.Name), c.settles)
}

// procTails returns the end of every master process's log, for error messages.
func (c *cluster) procTails() string {
	var b strings.Builder
	for _, m := range c.d.masters {
		for _, p := range m.Procs() {
			fmt.Fprintf(&b, "\n--- %s %s (%s):\n%s", m.Name, p.Name, p.Log, p.Tail(1500))
		}
	}
	return b.String()
}

// poll calls cond every 50 ms until it is true, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return hnetns.Poll(ctx, timeout, 50*time.Millisecond, cond)
}

// shortName gives a DNS-label-safe short name for a stack, used in object names.
func shortName(stack string) string {
	switch stack {
	case stackHACP:
		return "hacp"
	case stackAnchor:
		return "kh"
	case stackAnchorTuned:
		return "kht"
	case stackHACPBGP:
		return "hbgp"
	}
	return "x"
}

// etcdLeader returns the name of the etcd member that leads the cluster, asked of m2's
// member over its loopback client URL (from inside m2, with the etcd client certificate its
// apiserver generated). It explains part of the spread of kill-master numbers: a leader that
// dies with the master costs an election.
func (c *cluster) etcdLeader(ctx context.Context) string {
	m := c.master("m2")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	tlsCfg, err := certs.LoadEtcdClientTLS(filepath.Join(c.dir, m.Name, "data", "pki"))
	if err != nil {
		return "?"
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://127.0.0.1:2379"},
		DialTimeout: time.Second,
		TLS:         tlsCfg,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return m.DialContext(ctx, "tcp", addr)
		})},
		Logger: zap.NewNop(),
	})
	if err != nil {
		return "?"
	}
	defer cli.Close()
	st, err := cli.Status(ctx, "https://127.0.0.1:2379")
	if err != nil {
		return "?"
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return "?"
	}
	for _, mem := range members.Members {
		if mem.ID == st.Leader {
			return mem.Name
		}
	}
	return "?"
}
