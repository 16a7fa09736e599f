package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The watch cache's rows: two processes of the same apiserver program, each on its own
// embedded etcd, one with --watch-cache=true and one with --watch-cache=false, filled alike
// and measured in alternating rounds; then the heap the cache takes per object, and a
// fan-out of events to many watchers in a separate client process.

var (
	bigN       = flag.Int("cache-objects", 10000, "configmaps in the big list of the cache rows")
	fanWatches = flag.Int("fanout-watchers", 1000, "watchers of the fan-out row")
	fanEvents  = flag.Int("fanout-events", 1000, "events of the fan-out row")
	fanRate    = flag.Int("fanout-rate", 50, "events per second the fan-out row writes")
	fanProfile = flag.String("fanout-cpuprofile", "", "write the apiserver's CPU profile over the fan-out row's writes (with the cache) to this `file`")
	fanOff     = flag.Bool("fanout-without-cache", true, "also measure the fan-out row on the server without the watch cache (slow: 1,000 etcd watches)")
	cacheParts = flag.String("cache-parts", "lists,fanout,memory,kube", "which parts of the cache rows to run (kube: side by side with kube-apiserver 1.33 on the same etcd)")
	// The fan-out client: the bench runs itself with these.
	fanClient     = flag.Bool("fanout-client", false, "internal: be the fan-out row's watch client")
	fanKubeconfig = flag.String("fanout-kubeconfig", "", "internal: the fan-out client's kubeconfig")
	fanNamespace  = flag.String("fanout-namespace", "", "internal: the namespace the fan-out client watches")
)

// cacheServer is one apiserver process of the cache rows.
type cacheServer struct {
	name       string
	cmd        *exec.Cmd
	cs         kubernetes.Interface
	kubeconfig string
	pki        string // its cert dir, with the etcd client certificate
}

func startCacheServer(dir, exe, name string, fsync, cache bool) *cacheServer {
	cfg, err := servertest.Config(filepath.Join(dir, name))
	must(err)
	cfg.EtcdUnsafeNoFsync = !fsync
	cmd := startProcess(exe, cfg, fmt.Sprintf("--watch-cache=%v", cache), "--max-requests-inflight=0", "--max-mutating-requests-inflight=0")
	kc := filepath.Join(cfg.DataDir, "admin.kubeconfig")
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	must(err)
	rc.QPS, rc.Burst = 1e6, 1e6
	return &cacheServer{name: name, cmd: cmd, cs: kubernetes.NewForConfigOrDie(rc), kubeconfig: kc, pki: filepath.Join(cfg.DataDir, "pki")}
}

func (s *cacheServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// fill creates namespace ns with n configmaps named cm-00000...
func (s *cacheServer) fill(ctx context.Context, ns string, n int) {
	_, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	run("fill", 32, n, func(i int) error {
		_, err := s.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i),
			Labels: map[string]string{"app": "bench", "index": strconv.Itoa(i)}}, Data: map[string]string{"key": "value", "other": "a somewhat longer value of a configmap"}}, metav1.CreateOptions{})
		return err
	})
}

func cacheRows(ctx context.Context, dir string, fsync bool, binary string, n int) {
	exe := apiserverBinary(binary, dir)
	on := startCacheServer(dir, exe, "cache-on", fsync, true)
	defer on.stop()
	off := startCacheServer(dir, exe, "cache-off", fsync, false)
	defer off.stop()
	part := func(name string) bool { return strings.Contains(","+*cacheParts+",", ","+name+",") }
	if part("lists") || part("memory") {
		for _, s := range []*cacheServer{on, off} {
			s.fill(ctx, "big", *bigN)
			s.fill(ctx, "list100", 100)
		}
	}
	if part("lists") {
		listCacheRows(ctx, exe, fsync, n, on, off)
	}
	if part("fanout") {
		fmt.Println()
		fanout(ctx, on)
		if *fanOff {
			fanout(ctx, off)
		}
	}
	if part("memory") {
		fmt.Println()
		cacheMemory(ctx, on)
	}
	if part("kube") {
		kubeRows(ctx, dir, n, on, part("lists") || part("memory"))
	}
}

// listCacheRows measures gets and lists on the two servers, with each server process's CPU
// time per request: the bench's client decodes every response on the same two cores, so
// the rates show the client's share as much as the servers'.
func listCacheRows(ctx context.Context, exe string, fsync bool, n int, on, off *cacheServer) {
	both := func(name string, conc, ops int, op func(s *cacheServer, i int) error) cpuRow {
		return measureServerCPU(on.cmd.Process.Pid, off.cmd.Process.Pid, name, conc, ops,
			func(i int) error { return op(on, i) }, func(i int) error { return op(off, i) })
	}
	var rows []cpuRow
	for _, conc := range []int{1, 32} {
		ops := n
		if conc > 1 {
			ops = 4 * n
		}
		for _, rv := range []string{"", "0"} {
			rows = append(rows, both("get rv="+rvName(rv), conc, ops, func(s *cacheServer, i int) error {
				_, err := s.cs.CoreV1().ConfigMaps("big").Get(ctx, fmt.Sprintf("cm-%05d", i%*bigN), metav1.GetOptions{ResourceVersion: rv})
				return err
			}))
		}
		for _, rv := range []string{"", "0"} {
			rows = append(rows, both("list100 rv="+rvName(rv), conc, ops/2, func(s *cacheServer, i int) error {
				l, err := s.cs.CoreV1().ConfigMaps("list100").List(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err == nil && len(l.Items) != 100 {
					err = fmt.Errorf("list100 returned %d items", len(l.Items))
				}
				return err
			}))
		}
		for _, rv := range []string{"", "0"} {
			rows = append(rows, both("list100 raw rv="+rvName(rv), conc, ops/2, func(s *cacheServer, i int) error {
				return rawList100(ctx, s, rv)
			}))
		}
	}
	for _, rv := range []string{"", "0"} {
		rows = append(rows, both(fmt.Sprintf("list%dk rv=%s", *bigN/1000, rvName(rv)), 1, 20, func(s *cacheServer, i int) error {
			l, err := s.cs.CoreV1().ConfigMaps("big").List(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err == nil && len(l.Items) != *bigN {
				err = fmt.Errorf("big list returned %d items", len(l.Items))
			}
			return err
		}))
		rows = append(rows, both(fmt.Sprintf("list%dk paged rv=%s", *bigN/1000, rvName(rv)), 1, 20, func(s *cacheServer, i int) error {
			got := 0
			opts := metav1.ListOptions{ResourceVersion: rv, Limit: 500}
			for {
				l, err := s.cs.CoreV1().ConfigMaps("big").List(ctx, opts)
				if err != nil {
					return err
				}
				got += len(l.Items)
				if l.Continue == "" {
					break
				}
				opts = metav1.ListOptions{Limit: 500, Continue: l.Continue}
			}
			if got != *bigN {
				return fmt.Errorf("paged big list returned %d items", got)
			}
			return nil
		}))
	}
	fmt.Printf("\nwatch cache: the same apiserver program (%s) with --watch-cache=true vs --watch-cache=false, each its own process\n", exe)
	fmt.Printf("on its own embedded etcd (fsync=%v) holding %d + 100 configmaps; %d alternating rounds per row, load average %s\n\n", fsync, *bigN, rounds, loadavg())
	printRatesAndCPU(rows, "cache", "none", "(with its own etcd member); none/cache is how many requests the server with the cache serves for the CPU\n"+
		"one without it takes, i.e. its throughput when the server, not the bench's client, has the cores\n")
	fmt.Printf("\nRSS after the rows: with the cache %s, without %s\n", readRSS(on.cmd.Process.Pid), readRSS(off.cmd.Process.Pid))
}

// rawList100 lists the list100 namespace and reads the response to its end without decoding
// it: what a server serves when the client's decoding (the same for both sides, on the same
// two cores) is left out, as a load generator such as wrk measures a web server.
func rawList100(ctx context.Context, s *cacheServer, rv string) error {
	req := s.cs.CoreV1().RESTClient().Get().Namespace("list100").Resource("configmaps")
	if rv != "" {
		req = req.Param("resourceVersion", rv)
	}
	b, err := req.Do(ctx).Raw()
	if err == nil && len(b) < 100*50 {
		err = fmt.Errorf("list100 returned %d bytes", len(b))
	}
	return err
}

func rvName(rv string) string {
	if rv == "" {
		return "unset"
	}
	return rv
}

// apiserverBinary is the apiserver program to start: binary, bin/apiserver (make bench
// builds it), or one built into dir.
func apiserverBinary(binary, dir string) string {
	if binary == "" {
		binary = "bin/apiserver"
	}
	exe, err := filepath.Abs(binary)
	must(err)
	if _, err := os.Stat(exe); err != nil {
		exe = filepath.Join(dir, "apiserver")
		if _, err := os.Stat(exe); err != nil {
			out, err := exec.Command("go", "build", "-o", exe, "./cmd/apiserver").CombinedOutput()
			if err != nil {
				must(fmt.Errorf("build apiserver: %v\n%s", err, out))
			}
		}
	}
	return exe
}

// fanoutResult is what the fan-out client reports.
type fanoutResult struct {
	Watchers, Events, Delivered, Closed int
	P50, P99, Max                       time.Duration
	CPU                                 time.Duration
}

// fanout measures one server: a client process opens the watchers, then this process
// writes the events at a steady rate, each stamped with the time its write started; the
// client records when each watcher got each event.
func fanout(ctx context.Context, s *cacheServer) {
	ns := "fanout-" + s.name
	_, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	self, err := os.Executable()
	must(err)
	client := exec.Command(self, "-fanout-client", "-fanout-kubeconfig", s.kubeconfig, "-fanout-namespace", ns,
		"-fanout-watchers", strconv.Itoa(*fanWatches), "-fanout-events", strconv.Itoa(*fanEvents))
	client.Stderr = os.Stderr
	out, err := client.StdoutPipe()
	must(err)
	must(client.Start())
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		must(fmt.Errorf("fan-out client did not get ready: %q", lines.Text()))
	}
	pid := s.cmd.Process.Pid
	cpu0, t0 := pidCPU(pid), time.Now()
	profiled := make(chan struct{})
	if *fanProfile != "" && s.name == "cache-on" {
		// Over most of the writes: they take at least events/rate seconds.
		secs := max(1, *fanEvents / *fanRate * 3 / 4)
		go func() {
			defer close(profiled)
			data, err := s.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(secs)).Timeout(time.Duration(secs+60) * time.Second).DoRaw(ctx)
			must(err)
			must(os.WriteFile(*fanProfile, data, 0o644))
		}()
	} else {
		close(profiled)
	}
	tick := time.NewTicker(time.Second / time.Duration(*fanRate))
	for i := range *fanEvents {
		<-tick.C
		_, err := s.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ev-%05d", i),
			Annotations: map[string]string{"sent": strconv.FormatInt(time.Now().UnixNano(), 10)}}}, metav1.CreateOptions{})
		must(err)
	}
	tick.Stop()
	<-profiled
	var r fanoutResult
	if !lines.Scan() {
		must(fmt.Errorf("fan-out client gave no result"))
	}
	must(json.Unmarshal(lines.Bytes(), &r))
	_ = client.Wait()
	wall, cpu := time.Since(t0), pidCPU(pid)-cpu0
	fmt.Printf("fan-out %-10s %d watchers (one client process), %d events at %d/s: delivered %d of %d, closed %d; delivery p50 %s p99 %s max %s; apiserver CPU %s in %s (%.0f%% of a core), client CPU %s\n",
		s.name, r.Watchers, r.Events, *fanRate, r.Delivered, r.Watchers*r.Events, r.Closed, round(r.P50), round(r.P99), round(r.Max),
		cpu.Round(10*time.Millisecond), wall.Round(10*time.Millisecond), 100*cpu.Seconds()/wall.Seconds(), r.CPU.Round(10*time.Millisecond))
}

// fanoutClientMain is the fan-out row's client process: it opens the watchers, says
// "ready", collects the delivery latencies of the events and prints them as JSON.
func fanoutClientMain() {
	rc, err := clientcmd.BuildConfigFromFlags("", *fanKubeconfig)
	must(err)
	rc.QPS, rc.Burst = 1e6, 1e6
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps(*fanNamespace)
	l, err := cms.List(ctx, metav1.ListOptions{})
	must(err)
	lats := make([][]time.Duration, *fanWatches)
	var closed atomic.Int64
	var wg sync.WaitGroup
	ws := make([]watch.Interface, *fanWatches)
	for i := range ws {
		ws[i], err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		must(err)
	}
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				now := time.Now().UnixNano()
				if ev.Type != watch.Added {
					continue
				}
				sent, _ := strconv.ParseInt(ev.Object.(*corev1.ConfigMap).Annotations["sent"], 10, 64)
				lats[i] = append(lats[i], time.Duration(now-sent))
				if len(lats[i]) == *fanEvents {
					return
				}
			}
			closed.Add(1)
		}()
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Duration(*fanEvents / *fanRate + 120) * time.Second):
		for _, w := range ws {
			w.Stop()
		}
		<-done
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r := fanoutResult{Watchers: *fanWatches, Events: *fanEvents, Delivered: len(all), Closed: int(closed.Load()), CPU: processCPU()}
	if len(all) > 0 {
		r.P50, r.P99, r.Max = all[len(all)/2], all[min(len(all)-1, len(all)*99/100)], all[len(all)-1]
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// cacheMemory measures the heap the watch cache takes per object: a registry on the
// cache-on server's etcd is started in this process without, then with, the cache, and the
// live heap compared once the configmaps' cache holds every object.
func cacheMemory(ctx context.Context, s *cacheServer) {
	url := etcdURLOf(s)
	client := etcdClient(url, s.pki)
	defer client.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	start := func(cache bool) (*controlplane.Registry, context.CancelFunc) {
		rctx, cancel := context.WithCancel(ctx)
		r := controlplane.New(client, controlplane.Config{Logger: quiet, WatchCache: cache, ServiceRepairInterval: -1})
		must(r.Start(rctx))
		return r, cancel
	}
	base := heap()
	r0, stop0 := start(false)
	without := heap()
	stop0()
	_ = r0
	r1, stop1 := start(true)
	defer stop1()
	c := r1.Resource(schema.GroupResource{Resource: "configmaps"}).Store.Storage().(*storage.Cacher)
	deadline := time.Now().Add(60 * time.Second)
	for !c.Ready() || c.Len() < *bigN {
		if time.Now().After(deadline) {
			must(fmt.Errorf("configmaps cache holds %d objects after 60s", c.Len()))
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
	with := heap()
	objs := c.Len()
	fmt.Printf("watch cache memory: %d configmaps cached (each 2 labels, 2 data keys, as created by the API); live heap of a registry without the cache %.1f MB,\n",
		objs, float64(without-base)/1e6)
	fmt.Printf("with it %.1f MB: %.0f bytes per cached object (every resource's cache counted, the configmaps' holding nearly all objects)\n",
		float64(with-base)/1e6, float64(int64(with)-int64(without))/float64(objs))
}

// etcdURLOf is the client URL of s's embedded etcd, from its command line.
func etcdURLOf(s *cacheServer) string {
	args := s.cmd.Args
	for i, a := range args {
		if a == "--etcd-listen-client-url" && i+1 < len(args) {
			return args[i+1]
		}
	}
	must(fmt.Errorf("no etcd URL in %s", strings.Join(args, " ")))
	return ""
}
