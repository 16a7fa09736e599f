package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/upstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// run is one server's measurement in progress.
type runState struct {
	s       *stack
	rep     *serverReport
	rec     *recorder
	admin   *kubernetes.Clientset // through the VIP, recorded
	monitor *kubernetes.Clientset // straight to m2, not recorded: the bench's own checks
	nodes   []string
	plan    plan
	pods    *podTracker
	usage   *usage

	stormEnd time.Time // every watch back and every node Lease renewed after the fault
}

// measure runs one server through the whole bench and returns its report (with Error set
// when a step failed; what was measured until then is kept).
func (b *bench) measure(ctx context.Context, name string) *serverReport {
	rep := &serverReport{}
	if err := b.measureInto(ctx, name, rep); err != nil {
		rep.Error = err.Error()
		b.progress("%s: %s", name, firstLine(rep.Error))
		rep.SLOMet = false
		rep.Storm.Met = false
	}
	return rep
}

func (b *bench) measureInto(ctx context.Context, name string, rep *serverReport) error {
	s, err := newStack(b, name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.stop()
		if err := keepLogs(filepath.Join(s.dir, "logs"), filepath.Join(b.opts.out, "logs", name)); err != nil {
			b.progress("%s: keeping the logs: %v", name, err)
		}
	}()
	b.progress("%s: starting servers, vipd + lbproxy, controller-manager, scheduler, kwok", name)
	if err := s.start(ctx); err != nil {
		return err
	}
	r := &runState{s: s, rep: rep, rec: &recorder{}, pods: newPodTracker(), usage: newUsage(s)}
	b2 := b.bundle
	if r.admin, err = kubernetes.NewForConfig(restConfig(b2, b.client, vipURL(), b2.AdminCertPEM, b2.AdminKeyPEM, r.rec, 1e6)); err != nil {
		return err
	}
	if r.monitor, err = kubernetes.NewForConfig(restConfig(b2, b.client, apiURL(b.masters[1]), b2.AdminCertPEM, b2.AdminKeyPEM, nil, 1e6)); err != nil {
		return err
	}
	go r.usage.sample(ctx)
	if err := r.setup(ctx); err != nil {
		return err
	}
	ag, err := s.startAgents(ctx, r.nodes, r.rec)
	if err != nil {
		return err
	}
	if err := poll(ctx, 5*time.Minute, ag.established); err != nil {
		return fmt.Errorf("node agents' watches not established: %w", err)
	}
	b.progress("%s: %d node agents watching through the VIP", name, len(r.nodes))
	err = r.loadAndStorm(ctx, ag)
	rep.WatchEvents = ag.events.Load()
	r.finish()
	return err
}

// setup creates the nodes and waits until kwok has made them Ready.
func (r *runState) setup(ctx context.Context) error {
	b := r.s.b
	for i := range b.opts.nodes {
		r.nodes = append(r.nodes, fmt.Sprintf("node-%d", i))
	}
	if err := forEach(r.nodes, 8, func(n string) error {
		return retry(ctx, 2*time.Minute, func() error {
			_, err := r.admin.CoreV1().Nodes().Create(ctx, upstream.KwokNode(n), metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return fmt.Errorf("create nodes: %w", err)
	}
	ready := func() bool {
		l, err := r.monitor.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		n := 0
		for _, node := range l.Items {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					n++
				}
			}
		}
		return n == len(r.nodes)
	}
	if err := poll(ctx, 5*time.Minute, ready); err != nil {
		return fmt.Errorf("kwok did not make %d nodes Ready: %w%s", len(r.nodes), err, r.s.tails())
	}
	leases := func() bool {
		l, err := r.monitor.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) >= len(r.nodes)
	}
	if err := poll(ctx, 2*time.Minute, leases); err != nil {
		return fmt.Errorf("kwok did not create %d node Leases: %w", len(r.nodes), err)
	}
	r.s.b.progress("%s: %d kwok nodes Ready", r.s.name, len(r.nodes))
	return nil
}

// windows are the load's durations.
func (r *runState) steadyWindow() time.Duration {
	if r.s.b.opts.quick {
		return 15 * time.Second
	}
	return time.Minute
}

// loadAndStorm runs the ClusterLoader2-style load with the steady request mix, kills the
// VIP master at steady load, measures the recovery, then deletes the load.
func (r *runState) loadAndStorm(ctx context.Context, ag *agents) error {
	b := r.s.b
	r.plan = newPlan(b.opts.nodes, b.opts.podsPerNode)
	go watchPods(ctx, r.monitor, r.pods)
	if err := retry(ctx, time.Minute, func() error {
		_, err := r.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale-cm"}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	load := &steadyLoad{cs: r.admin, ns: "scale-cm", nodes: r.nodes, quick: b.opts.quick}
	steadyStart := time.Now()
	go load.run(lctx, r.plan.namespaces)
	if err := r.createAndScale(ctx); err != nil {
		return err
	}
	if err := r.volumeWatchesOpen(ctx, ag); err != nil {
		return err
	}
	r.profile(ctx)
	if err := sleepCtx(ctx, r.steadyWindow()); err != nil { // steady load, then the fault
		return err
	}
	r.leaderToVictim(ctx)
	fault := time.Now()
	r.rep.setClasses(statsByClass(r.rec.between(steadyStart, fault)))
	r.rep.Pods = len(r.pods.startup())
	r.rep.PodStartupP50S, r.rep.PodStartupP99S = round3(percentile(r.pods.startup(), 50)), round3(percentile(r.pods.startup(), 99))
	r.rep.setClasses(r.rep.Requests) // again, now with the pod numbers
	r.usage.freeze()
	if err := r.storm(ctx, ag, fault); err != nil {
		return err
	}
	stopLoad()
	lost, acked, err := load.lost(ctx, r.monitor)
	if err != nil {
		return fmt.Errorf("read back ConfigMaps: %w", err)
	}
	r.rep.Storm.WritesLost, r.rep.Storm.WritesAcked = lost, acked
	r.rep.timeline = timelineOf(r.rec.between(steadyStart, time.Now()), fault)
	r.rep.Storm.setStorm(r.rec.between(fault, r.stormEnd))
	b.progress("%s: deleting the load", r.s.name)
	if err := deleteLoad(ctx, r.monitor, r.plan); err != nil {
		return fmt.Errorf("delete load: %w", err)
	}
	if err := poll(ctx, 3*time.Minute, func() bool { return r.pods.liveCount() == 0 }); err != nil {
		b.progress("%s: %d pods still there after the delete", r.s.name, r.pods.liveCount())
	}
	// The kubelets stop their volume watches as their pods' deletions reach them.
	_ = poll(ctx, time.Minute, func() bool { return ag.volumeWatches(time.Time{}).total == 0 })
	c := ag.volumeWatches(time.Time{})
	b.progress("%s: load deleted: %d volume watches left (%d pods on the kubelets)", r.s.name, c.total, c.pods)
	return nil
}

// createAndScale creates the Deployments at half size, scales them to full size, and waits
// each time until every pod is Running.
func (r *runState) createAndScale(ctx context.Context) error {
	b := r.s.b
	total := len(r.plan.deployments) * deploymentSize
	b.progress("%s: creating %d Deployments (+ Services, ConfigMaps, Secrets) at %d pods each", r.s.name, len(r.plan.deployments), deploymentSize/2)
	if err := createLoad(ctx, r.admin, r.plan, deploymentSize/2); err != nil {
		return err
	}
	if err := poll(ctx, 10*time.Minute, func() bool { return r.pods.liveCount() >= total/2 }); err != nil {
		return fmt.Errorf("%d of %d pods Running: %w", r.pods.liveCount(), total/2, err)
	}
	b.progress("%s: scaling to %d pods", r.s.name, total)
	if err := scaleLoad(ctx, r.admin, r.plan, deploymentSize); err != nil {
		return err
	}
	if err := poll(ctx, 10*time.Minute, func() bool { return r.pods.liveCount() >= total }); err != nil {
		return fmt.Errorf("%d of %d pods Running: %w", r.pods.liveCount(), total, err)
	}
	b.progress("%s: %d pods Running; steady load for %v", r.s.name, total, r.steadyWindow())
	return nil
}

// volumeWatchesOpen waits until the kubelets know every pod of the load and have a watch
// open on every Secret and ConfigMap their pods mount (and their own four).
func (r *runState) volumeWatchesOpen(ctx context.Context, ag *agents) error {
	total := len(r.plan.deployments) * deploymentSize
	if err := poll(ctx, 5*time.Minute, func() bool {
		return ag.volumeWatches(time.Time{}).pods >= total && ag.established()
	}); err != nil {
		c := ag.volumeWatches(time.Time{})
		return fmt.Errorf("kubelets' volume watches: %d of %d open, %d of %d pods seen: %w", c.open, c.total, c.pods, total, err)
	}
	c := ag.volumeWatches(time.Time{})
	r.s.b.progress("%s: %d Secret and ConfigMap watches open on %d nodes (their %d pods' volumes)", r.s.name, c.open, len(r.nodes), c.pods)
	return nil
}

// storm kills every process of m1 (the VIP holder), creates the marker Service and
// EndpointSlice, and waits until every node's watches (its Secret and ConfigMap watches
// among them) are back and caught up and every node Lease was renewed after the fault,
// counting Leases that went stale past 40 s.
func (r *runState) storm(ctx context.Context, ag *agents, fault time.Time) error {
	b := r.s.b
	marker := fmt.Sprintf("storm-%d", fault.UnixNano())
	ag.expectMarkers(marker)
	b.progress("%s: killing m1 (SIGSTOP, then SIGKILL of its %d processes)", r.s.name, len(hnetns.PIDs(b.masters[0].NS)))
	hnetns.KillAll(b.masters[0].NS)
	if err := createMarkers(ctx, r.admin, "scale-cm", marker); err != nil {
		return fmt.Errorf("marker through the VIP after the fault: %w", err)
	}
	stale := map[string]bool{}
	seen := map[string]bool{}
	renewed := func() bool {
		l, err := r.monitor.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		now, all := time.Now(), true
		for _, lease := range l.Items {
			seen[lease.Name] = true
			if lease.Spec.RenewTime == nil {
				all = false
				continue
			}
			if now.Sub(lease.Spec.RenewTime.Time) > leaseStaleAfter {
				stale[lease.Name] = true
			}
			all = all && lease.Spec.RenewTime.After(fault)
		}
		return all && len(l.Items) >= len(r.nodes)
	}
	var pending int
	var last time.Time
	_ = poll(ctx, 90*time.Second, func() bool {
		leasesOK := renewed()
		pending, last = ag.recovered(fault)
		return leasesOK && pending == 0
	})
	r.stormEnd = time.Now()
	st := &r.rep.Storm
	st.WatchesNotReestablished = pending
	st.WatchesReestablishedS = round3(time.Since(fault).Seconds())
	if pending == 0 {
		st.WatchesReestablishedS = round3(last.Sub(fault).Seconds())
	}
	for _, n := range r.nodes {
		if !seen[n] {
			stale[n] = true // a node without a Lease is as NotReady as a stale one
		}
	}
	st.StaleLeases = len(stale)
	c := ag.volumeWatches(fault)
	b.progress("%s: storm: watches back after %.3fs (%d nodes not; volume watches: %d of %d open, %d of them reopened after the fault), %d Leases stale",
		r.s.name, st.WatchesReestablishedS, pending, c.open, c.total, c.reopened, st.StaleLeases)
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// finish fills the resource numbers.
func (r *runState) finish() {
	r.rep.CPUS, r.rep.PeakRSSMB = r.usage.totals()
	r.rep.OtherCPUS, r.rep.BenchCPUS = r.usage.side()
	r.rep.RSSBreakdown = r.usage.breakdown()
	r.rep.EtcdDBFileMB = round3(float64(etcdDBSize(r.s.dir)) / (1 << 20))
	if inUse, err := r.s.etcdInUse(r.s.b.masters[1]); err == nil {
		r.rep.EtcdDBMB = round3(float64(inUse) / (1 << 20))
	} else {
		r.s.b.progress("%s: etcd status on m2: %v", r.s.name, err)
	}
}

// etcdDBSize is the largest etcd backend file (member/snap/db) under dir.
func etcdDBSize(dir string) int64 {
	var size int64
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Name() == "db" && filepath.Base(filepath.Dir(path)) == "snap" {
			size = max(size, info.Size())
		}
		return nil
	})
	return size
}

// usage samples the server processes' CPU time and peak RSS from /proc every second.
type usage struct {
	s      *stack
	mu     sync.Mutex
	cpu    map[int]float64 // pid -> seconds
	hwm    map[int]float64 // pid -> MB
	master map[int]string
	frozen bool
	// others: every other process on the hosts (controller-managers, schedulers, kwok,
	// vipd, lbproxy), pid -> CPU seconds; self0: the bench's own CPU seconds at the start.
	others map[int]float64
	self0  float64
	selfS  float64
	mem    *memSampler
}

func newUsage(s *stack) *usage {
	u := &usage{s: s, cpu: map[int]float64{}, hwm: map[int]float64{}, master: map[int]string{}, others: map[int]float64{}}
	u.mem = newMemSampler(s)
	for m, procs := range s.server {
		for _, p := range procs {
			u.master[p.Cmd.Process.Pid] = m
		}
	}
	u.self0, _ = procCPU(os.Getpid())
	return u
}

// readOthers samples the CPU time of the hosts' other processes and of the bench itself.
func (u *usage) readOthers() {
	for _, h := range append([]*hnetns.Host{u.s.b.client}, u.s.b.masters...) {
		for _, pid := range hnetns.PIDs(h.NS) {
			if _, ok := u.master[pid]; ok {
				continue
			}
			if cpu, ok := procCPU(pid); ok {
				u.others[pid] = max(u.others[pid], cpu)
			}
		}
	}
	if cpu, ok := procCPU(os.Getpid()); ok {
		u.selfS = cpu - u.self0
	}
}

// side returns the CPU seconds of the other processes and of the bench itself.
func (u *usage) side() (othersS, benchS float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range u.others {
		othersS += c
	}
	return round3(othersS), round3(u.selfS)
}

func (u *usage) sample(ctx context.Context) {
	go u.scrapeLoop(ctx)
	for {
		u.read()
		if sleepCtx(ctx, time.Second) != nil {
			return
		}
	}
}

func (u *usage) read() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.frozen {
		return
	}
	u.readOthers()
	for pid := range u.master {
		if cpu, ok := procCPU(pid); ok {
			u.cpu[pid] = cpu
		}
		u.readMem(pid)
	}
}

// freeze takes a last sample and stops sampling: the numbers are the steady phase's.
func (u *usage) freeze() {
	u.read()
	u.mu.Lock()
	u.frozen = true
	u.mu.Unlock()
}

// totals returns the CPU seconds of all server processes and the largest master's peak RSS.
func (u *usage) totals() (cpuS, peakMB float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	per := map[string]float64{}
	for pid, m := range u.master {
		cpuS += u.cpu[pid]
		per[m] += u.hwm[pid]
	}
	for _, v := range per {
		peakMB = max(peakMB, v)
	}
	return round3(cpuS), round3(peakMB)
}

// procCPU is the user+system CPU seconds of pid.
func procCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15, clock ticks of 1/100 s) from a
// /proc/PID/stat line; the command name in parentheses may hold spaces.
func parseStatCPU(stat string) (float64, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (ut + st) / 100, true
}

// keepLogs copies the last 2 MiB of every log in from into to.
func keepLogs(from, to string) error {
	files, err := filepath.Glob(filepath.Join(from, "*.log"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	const keep = 2 << 20
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if len(b) > keep {
			b = b[len(b)-keep:]
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
