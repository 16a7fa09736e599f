// Command apiserver benchmarks the apiserver through client-go against the
// same etcd measured directly in the same run, and prints ops/s, p50/p99 and
// the ratio apiserver/etcd; then idle RSS and time-to-ready of a server
// process restarted on an existing data dir.
//
//	go run ./test/bench/apiserver [-n 1000] [-fsync=true]   (from the repository root)
//
// With -apiserver BIN the apiserver measured is that program, started as a process with its
// embedded etcd (to compare two builds, run the bench against each in turn); -rows picks rows.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type result struct {
	name string
	conc int
	ops  int
	dur  time.Duration
	cpu  time.Duration // CPU time of this whole process (clients, server, etcd) meanwhile
	lat  []time.Duration
}

// cpuPerOp is the process CPU time spent per operation.
func (r result) cpuPerOp() time.Duration { return r.cpu / time.Duration(r.ops) }

// serverPID is the apiserver process measured (-apiserver), or 0 when it runs in the bench.
var serverPID int

// processCPU is the CPU time of the bench process and of the apiserver process measured.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + pidCPU(serverPID)
}

// pidCPU is the CPU time (user and system) of process pid so far, from /proc; 0 for pid 0.
func pidCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	_, _ = fmt.Sscan(f[11], &utime)
	_, _ = fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux everywhere).
const clockTicks = 100

// startProcess starts the apiserver program exe with cfg's data dir, ports and fsync, and
// waits until it is ready.
func startProcess(exe string, cfg *server.Config, extra ...string) *exec.Cmd {
	free, err := embedetcd.FreeLocalURL()
	must(err)
	secure := strings.TrimPrefix(free, "http://127.0.0.1:")
	args := append([]string{"--data-dir", cfg.DataDir, "--secure-port", secure,
		"--etcd-listen-client-url", cfg.EtcdListenClientURL, "--etcd-listen-peer-urls", cfg.EtcdListenPeerURL,
		"--etcd-auto-compaction-retention", "0", "--shutdown-delay", "0s", "--log-level", "error",
		fmt.Sprintf("--etcd-unsafe-no-fsync=%v", cfg.EtcdUnsafeNoFsync)}, extra...)
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	must(cmd.Start())
	prev := onExit
	onExit = func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); prev() }
	t0 := time.Now()
	// The admin kubeconfig is written once the server serves; /readyz is asked as admin,
	// since --authorization-mode=AlwaysAllow turns anonymous requests away (as upstream).
	kubeconfig := filepath.Join(cfg.DataDir, "admin.kubeconfig")
	for {
		if _, err := os.Stat(kubeconfig); err == nil {
			break
		}
		if time.Since(t0) > 2*time.Minute {
			must(fmt.Errorf("apiserver wrote no %s in 2m", kubeconfig))
		}
		time.Sleep(5 * time.Millisecond) // poll
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(err)
	rc.Timeout = time.Second
	admin := kubernetes.NewForConfigOrDie(rc).Discovery().RESTClient()
	for {
		_, err := admin.Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil {
			return cmd
		}
		if time.Since(t0) > 2*time.Minute {
			must(fmt.Errorf("apiserver on port %s not ready after 2m: %v", secure, err))
		}
		time.Sleep(5 * time.Millisecond) // poll
	}
}

// waitReady polls /readyz on the secure port until it answers 200 (30 s at most from t0).
func waitReady(port string, t0 time.Time) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	for {
		resp, err := client.Get("https://127.0.0.1:" + port + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			err = fmt.Errorf("/readyz: %s", resp.Status)
		}
		if time.Since(t0) > 2*time.Minute {
			must(fmt.Errorf("apiserver on port %s not ready after 2m: %v", port, err))
		}
		time.Sleep(5 * time.Millisecond) // poll
	}
}

func (r result) rate() float64 { return float64(r.ops) / r.dur.Seconds() }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// run calls op n times from conc goroutines and records each latency.
func run(name string, conc, n int, op func(i int) error) result {
	var next atomic.Int64
	lats := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start, cpu0 := time.Now(), processCPU()
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				lats[g] = append(lats[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		fmt.Fprintf(os.Stderr, "%s c=%d: %v\n", name, conc, err)
		onExit()
		os.Exit(1)
	}
	r := result{name: name, conc: conc, ops: n, dur: time.Since(start), cpu: processCPU() - cpu0}
	for _, l := range lats {
		r.lat = append(r.lat, l...)
	}
	return r
}

// merge pools the rounds of one measurement.
func merge(rs []result) result {
	m := result{name: rs[0].name, conc: rs[0].conc}
	for _, r := range rs {
		m.ops += r.ops
		m.dur += r.dur
		m.cpu += r.cpu
		m.lat = append(m.lat, r.lat...)
	}
	return m
}

// pair is one row: the apiserver and etcd doing the same thing, measured in alternating
// rounds so that both see the same machine (this one is shared and noisy).
type pair struct {
	api, etcd result
	ratios    []float64 // api/etcd rate of each round
}

// ratio is the median of the rounds' ratios.
func (p pair) ratio() float64 {
	s := append([]float64(nil), p.ratios...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// measure runs ops operations of each side in rounds, alternating which side goes first.
// Operation indexes are unique across rounds.
func measure(name string, conc, ops int, api, etcd func(round int) result) pair {
	var as, es []result
	var p pair
	for r := range rounds {
		var a, e result
		if r%2 == 0 {
			a, e = api(r), etcd(r)
		} else {
			e, a = etcd(r), api(r)
		}
		as, es = append(as, a), append(es, e)
		p.ratios = append(p.ratios, a.rate()/e.rate())
	}
	p.api, p.etcd = merge(as), merge(es)
	p.api.name, p.etcd.name = name, name
	return p
}

// rounds is how many alternating rounds each row has.
const rounds = 5

// measureOps is measure for two plain operations.
func measureOps(name string, conc, ops int, api, etcd func(i int) error) pair {
	per := ops / rounds
	return measure(name, conc, ops,
		func(r int) result { return run(name, conc, per, func(i int) error { return api(r*per + i) }) },
		func(r int) result { return run(name, conc, per, func(i int) error { return etcd(r*per + i) }) })
}

func main() {
	n := flag.Int("n", 1000, "operations per row at concurrency 1, over all rounds (x4 at concurrency 32)")
	fsync := flag.Bool("fsync", true, "keep etcd's fsync on (off measures CPU cost only)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	binary := flag.String("apiserver", "", "measure this apiserver `program` (started as a process, embedded etcd) instead of the one built into the bench")
	rowList := flag.String("rows", "", "comma-separated `names` of the rows to run (create, get, merge-patch, update, delete, list, watch, apply, rbac, crd, controllers, cache, process); all when empty")
	ctlNice := flag.Int("controllers-nice", 0, "run the controllers rows' kube-controller-manager and kube-scheduler at this nice `value` (19: they get CPU only when the bench and the apiservers leave it, as on other cores)")
	ctlKubeFlag := flag.Bool("controllers-kube", true, "also run the controllers rows' creates and gets on kube-apiserver 1.33 (two processes over the same etcd members, the same controllers attached to one): upstream's own with/without ratios as the reference")
	watchCache := flag.Bool("watch-cache", true, "run the apiserver measured with its watch cache (false: every read goes to etcd, as before the cache)")
	flag.Parse()
	if *fanClient {
		fanoutClientMain()
		return
	}
	want := rowFilter(*rowList)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}

	dir, err := os.MkdirTemp("", "apiserver-bench-")
	must(err)
	defer os.RemoveAll(dir)
	cfg, err := servertest.Config(filepath.Join(dir, "bench"))
	must(err)
	cfg.EtcdUnsafeNoFsync = !*fsync
	cfg.WatchCache = *watchCache
	watchCacheOn = *watchCache
	kubeconfig, stop := startMeasured(cfg, *binary, *watchCache)
	defer stop()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(err)
	rc.QPS, rc.Burst = 1e6, 1e6
	cs := kubernetes.NewForConfigOrDie(rc)
	// The baseline is an ordinary etcd client (gRPC over the member's client URL), as etcdctl
	// and any other program would use; the apiserver itself calls its embedded member in-process.
	etcd := etcdClient(cfg.EtcdListenClientURL, filepath.Join(cfg.DataDir, "pki"))
	defer etcd.Close()
	ctx := context.Background()

	sample := benchNamespace(ctx, cs)
	rows := crudRows(ctx, cs, etcd, sample, *n, want)

	// Lists of 100 items in their own namespace.
	if want("list") {
		listRows(ctx, cs, etcd, sample, *n, &rows)
	}
	if want("watch") {
		// Watch delivery: time from the start of a write to the event at a watcher.
		for _, conc := range []int{1, 32} {
			rows = append(rows, watchLatency(ctx, cs, etcd, sample, conc, *n))
		}
	}
	var apply []pair
	if want("apply") {
		apply = applyRows(ctx, cs, *n)
	}
	var rbac []cpuRow
	if want("rbac") {
		rbac = rbacRows(ctx, dir, *fsync, *binary, *n)
	}
	var crdJSON, crdProto, crdKubeRows []cpuRow
	if want("crd") {
		crdJSON, crdProto, crdKubeRows = crdRows(ctx, dir, *fsync, *binary, *n)
	}
	var ctl, ctlKube []cpuRow
	var ctlCPU, ctlKubeCPU time.Duration
	if want("controllers") {
		ctl, ctlCPU, ctlKube, ctlKubeCPU = controllersBothWays(ctx, dir, *fsync, *binary, *ctlNice, *ctlKubeFlag, *n)
	}
	printRows(rows, *fsync, *binary)
	if len(apply) > 0 {
		printApplyRows(apply)
	}
	if len(rbac) > 0 {
		printRBACRows(rbac)
	}
	if len(crdJSON) > 0 {
		printCRDRows(crdJSON, crdProto, crdKubeRows)
	}
	if len(ctl) > 0 {
		printControllerRows(ctl, ctlCPU, ctlKube, ctlKubeCPU, *ctlNice)
	}
	stop()
	if want("cache") {
		cacheRows(ctx, dir, *fsync, *binary, *n)
	}
	if want("process") {
		fmt.Println()
		processNumbers(*binary)
	}
}

// rowFilter reports for a row name whether it is in the comma-separated list (all are, when
// the list is empty).
func rowFilter(list string) func(row string) bool {
	return func(row string) bool {
		if list == "" {
			return true
		}
		for _, r := range strings.Split(list, ",") {
			if strings.TrimSpace(r) == row {
				return true
			}
		}
		return false
	}
}

// startMeasured starts the apiserver measured: binary as a process, or the one built into
// the bench; it returns its admin kubeconfig and how to stop it.
func startMeasured(cfg *server.Config, binary string, watchCache bool) (kubeconfig string, stop func()) {
	if binary != "" {
		proc := startProcess(binary, cfg, fmt.Sprintf("--watch-cache=%v", watchCache))
		serverPID = proc.Process.Pid
		kubeconfig = filepath.Join(cfg.DataDir, "admin.kubeconfig")
		stop = func() { _ = proc.Process.Signal(syscall.SIGTERM); _ = proc.Wait() }
	} else {
		s, err := servertest.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		must(err)
		kubeconfig = s.KubeconfigPath()
		stop = func() { _ = s.Shutdown() }
	}
	return kubeconfig, stop
}

// benchNamespace creates the namespace bench and returns a ConfigMap as JSON, the value the
// etcd baseline writes.
func benchNamespace(ctx context.Context, cs *kubernetes.Clientset) (sample []byte) {
	sample, _ = json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "cm-00000", Namespace: "bench", UID: "0b0e2f6c-4b8b-4c4b-9a53-4f6f2a6b0f00", CreationTimestamp: metav1.Now()}, Data: map[string]string{"key": "value"}})
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{})
	must(err)
	return sample
}

// casRaw is the etcd baseline of a write the apiserver conditions on what it read: a
// read of k, then op(k) if k's revision is still the one read.
func casRaw(ctx context.Context, etcd *clientv3.Client, k string, op func(string) clientv3.Op) error {
	r, err := etcd.Get(ctx, k)
	if err != nil {
		return err
	}
	if len(r.Kvs) == 0 {
		return fmt.Errorf("%s: not found", k)
	}
	_, err = etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", r.Kvs[0].ModRevision)).Then(op(k)).Commit()
	return err
}

// crudRows measures create, get, merge-patch, update and delete of ConfigMaps at
// concurrency 1 and 32, each against its etcd baseline.
func crudRows(ctx context.Context, cs *kubernetes.Clientset, etcd *clientv3.Client, sample []byte, n int, want func(string) bool) []pair {
	var rows []pair
	for _, conc := range []int{1, 32} {
		ops := n
		if conc > 1 {
			ops = n * 4
		}
		prefix := fmt.Sprintf("c%d-", conc)
		cms := cs.CoreV1().ConfigMaps("bench")
		add := func(p pair) {
			if want(p.api.name) {
				rows = append(rows, p)
			}
		}
		if !want("create") && !want("get") && !want("merge-patch") && !want("update") && !want("delete") {
			continue
		}
		// Every other row here works on the objects create makes: it always runs.
		add(measureOps("create", conc, ops, func(i int) error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%05d", prefix, i)}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
			return err
		}, func(i int) error {
			_, err := etcd.Put(ctx, fmt.Sprintf("/bench-raw/%s%05d", prefix, i), string(sample))
			return err
		}))
		if want("get") {
			add(measureOps("get", conc, ops, func(i int) error {
				_, err := cms.Get(ctx, fmt.Sprintf("%s%05d", prefix, i%ops), metav1.GetOptions{})
				return err
			}, func(i int) error {
				_, err := etcd.Get(ctx, fmt.Sprintf("/bench-raw/%s%05d", prefix, i%ops))
				return err
			}))
		}
		if want("merge-patch") {
			add(measureOps("merge-patch", conc, ops, func(i int) error {
				_, err := cms.Patch(ctx, fmt.Sprintf("%s%05d", prefix, i%ops), types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"n":"%d"}}`, i)), metav1.PatchOptions{})
				return err
			}, func(i int) error {
				// What a patch costs etcd: read, then compare-and-swap on the revision.
				return casRaw(ctx, etcd, fmt.Sprintf("/bench-raw/%s%05d", prefix, i%ops), func(k string) clientv3.Op { return clientv3.OpPut(k, string(sample)) })
			}))
		}
		if want("update") {
			add(measureOps("update", conc, ops, func(i int) error {
				// A PUT of the whole object, without a resourceVersion (last write wins).
				_, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%05d", prefix, i%ops)}, Data: map[string]string{"u": fmt.Sprint(i)}}, metav1.UpdateOptions{})
				return err
			}, func(i int) error {
				return casRaw(ctx, etcd, fmt.Sprintf("/bench-raw/%s%05d", prefix, i%ops), func(k string) clientv3.Op { return clientv3.OpPut(k, string(sample)) })
			}))
		}
		if want("delete") {
			add(measureOps("delete", conc, ops, func(i int) error {
				return cms.Delete(ctx, fmt.Sprintf("%s%05d", prefix, i), metav1.DeleteOptions{})
			}, func(i int) error {
				// What a delete costs etcd: read, then a delete conditioned on the revision.
				return casRaw(ctx, etcd, fmt.Sprintf("/bench-raw/%s%05d", prefix, i), func(k string) clientv3.Op { return clientv3.OpDelete(k) })
			}))
		}
	}
	return rows
}

// controllersBothWays measures the controllers rows on hacp and, with kube, on
// kube-apiserver, one set of controllers at a time.
func controllersBothWays(ctx context.Context, dir string, fsync bool, binary string, nice int, kube bool, n int) (ctl []cpuRow, ctlCPU time.Duration, ctlKube []cpuRow, ctlKubeCPU time.Duration) {
	with, without, pids, stopCtl, stopServers := controllersServers(ctx, dir, fsync, binary, nice)
	ctl, ctlCPU = controllerRows(ctx, with, without, pids, n, true)
	stopCtl() // one set of controllers at a time
	if kube {
		kw, ko, kpids, stopKube := kubeControllersServers(ctx, dir, with, without, nice)
		ctlKube, ctlKubeCPU = controllerRows(ctx, kw, ko, kpids, n, false)
		stopKube()
	}
	stopServers()
	return ctl, ctlCPU, ctlKube, ctlKubeCPU
}

// listRows measures lists of 100 items, with resourceVersion 0 and unset.
func listRows(ctx context.Context, cs kubernetes.Interface, etcd *clientv3.Client, sample []byte, n int, rows *[]pair) {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "list100"}}, metav1.CreateOptions{})
	must(err)
	for i := range 100 {
		_, err := cs.CoreV1().ConfigMaps("list100").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("item-%03d", i)}, Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
		must(err)
		_, err = etcd.Put(ctx, fmt.Sprintf("/bench-list/item-%03d", i), string(sample))
		must(err)
	}
	for _, conc := range []int{1, 32} {
		ops := n / 2
		if conc > 1 {
			ops = n
		}
		for _, rv := range []string{"0", ""} {
			name := "list100 rv=" + rv
			if rv == "" {
				name = "list100 rv=unset"
			}
			var opts []clientv3.OpOption
			opts = append(opts, clientv3.WithPrefix())
			if rv == "0" {
				opts = append(opts, clientv3.WithSerializable())
			}
			*rows = append(*rows, measureOps(name, conc, ops, func(int) error {
				l, err := cs.CoreV1().ConfigMaps("list100").List(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err == nil && len(l.Items) != 100 {
					err = fmt.Errorf("list returned %d items", len(l.Items))
				}
				return err
			}, func(int) error {
				_, err := etcd.Get(ctx, "/bench-list/", opts...)
				return err
			}))
		}
	}

}

// printRows prints the table of rows.
func printRows(rows []pair, fsync bool, binary string) {
	server := "the apiserver built into the bench"
	if binary != "" {
		server = binary + " (its own process; cpu/op adds its CPU time)"
	}
	fmt.Printf("measured: %s, watch cache %s\n", server, map[bool]string{true: "on", false: "off (--watch-cache=false)"}[watchCacheOn])
	fmt.Printf("apiserver (client-go typed clientset: protobuf over HTTP/2 and TLS) vs the same etcd (clientv3 over gRPC) in one run;\nfsync=%v, GOMAXPROCS=%d, %d alternating rounds per row, load average %s\n\n", fsync, numCPU(), rounds, loadavg())
	fmt.Printf("%-18s %4s | %10s %9s %9s %8s | %10s %9s %9s %8s | %7s\n", "op", "conc", "api ops/s", "p50", "p99", "cpu/op", "etcd ops/s", "p50", "p99", "cpu/op", "ratio")
	for _, p := range rows {
		fmt.Printf("%-18s %4d | %10.0f %9s %9s %8s | %10.0f %9s %9s %8s | %6.0f%%\n", p.api.name, p.api.conc,
			p.api.rate(), round(p.api.pct(0.5)), round(p.api.pct(0.99)), round(p.api.cpuPerOp()),
			p.etcd.rate(), round(p.etcd.pct(0.5)), round(p.etcd.pct(0.99)), round(p.etcd.cpuPerOp()), 100*p.ratio())
	}
	fmt.Println("\nops/s and latencies pool the rounds; ratio is the median of the rounds' api/etcd rates;")
	fmt.Println("cpu/op is the CPU time of the whole bench process (client, server and etcd) per operation.")
}

// watchLatency measures write-start to event-arrival through the apiserver and
// directly through etcd, with conc concurrent writers, in alternating rounds. Each side has
// one watch, started and seen to deliver an event before anything is timed.
func watchLatency(ctx context.Context, cs kubernetes.Interface, etcd *clientv3.Client, sample []byte, conc, ops int) pair {
	ns := fmt.Sprintf("watch-c%d", conc)
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	per := ops / rounds

	// The apiserver's watch starts at a list's resourceVersion, as informers do.
	cms := cs.CoreV1().ConfigMaps(ns)
	l, err := cms.List(ctx, metav1.ListOptions{})
	must(err)
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	must(err)
	defer w.Stop()
	apiEvents := make(chan string, 1024)
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				apiEvents <- ev.Object.(*corev1.ConfigMap).Name
			}
		}
	}()
	apiWrite := func(key string) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key}}, metav1.CreateOptions{})
		return err
	}

	prefix := "/bench-watch/" + ns + "/"
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := etcd.Watch(wctx, prefix, clientv3.WithPrefix())
	rawEvents := make(chan string, 1024)
	go func() {
		for resp := range wch {
			for _, ev := range resp.Events {
				rawEvents <- strings.TrimPrefix(string(ev.Kv.Key), prefix)
			}
		}
	}()
	rawWrite := func(key string) error {
		_, err := etcd.Put(ctx, prefix+key, string(sample))
		return err
	}

	for _, side := range []struct {
		events <-chan string
		write  func(string) error
	}{{apiEvents, apiWrite}, {rawEvents, rawWrite}} {
		must(side.write("warm-up"))
		select {
		case <-side.events:
		case <-time.After(10 * time.Second):
			must(fmt.Errorf("watch c=%d: no warm-up event", conc))
		}
	}

	one := func(round int, events <-chan string, write func(key string) error) result {
		var mu sync.Mutex
		sent := map[string]time.Time{}
		var lat []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for key := range events {
				now := time.Now()
				mu.Lock()
				if t0, ok := sent[key]; ok {
					lat = append(lat, now.Sub(t0))
					delete(sent, key)
				}
				n := len(lat)
				mu.Unlock()
				if n == per {
					return
				}
			}
		}()
		r := run("watch event", conc, per, func(i int) error {
			key := fmt.Sprintf("w-%05d", round*per+i)
			mu.Lock()
			sent[key] = time.Now()
			mu.Unlock()
			return write(key)
		})
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			fmt.Fprintf(os.Stderr, "watch c=%d: missing watch events\n", conc)
			onExit()
			os.Exit(1)
		}
		r.lat = lat
		return r
	}
	return measure("watch event", conc, ops,
		func(round int) result { return one(round, apiEvents, apiWrite) },
		func(round int) result { return one(round, rawEvents, rawWrite) })
}

// loadavg is the 1-minute load average, to show how busy the machine was.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}

// processNumbers starts the apiserver program (bin/apiserver, as make bench builds it) on one
// data dir six times: the first start creates the data, the other five measure the time from
// exec to /readyz answering 200; the last one's RSS is read after 5 s idle, with its parts:
// anonymous (heap, stacks) and file-backed (the binary's pages, etcd's mapped database).
func processNumbers(binary string) {
	dir, err := os.MkdirTemp("", "apiserver-bench-proc-")
	must(err)
	defer os.RemoveAll(dir)
	if binary == "" {
		binary = "bin/apiserver"
	}
	exe, err := filepath.Abs(binary)
	must(err)
	if _, err := os.Stat(exe); err != nil {
		exe = filepath.Join(dir, "apiserver")
		out, err := exec.Command("go", "build", "-o", exe, "./cmd/apiserver").CombinedOutput()
		if err != nil {
			must(fmt.Errorf("build apiserver: %v\n%s", err, out))
		}
	}
	port := func() string {
		u, err := embedetcd.FreeLocalURL()
		must(err)
		return u
	}
	secure := strings.TrimPrefix(port(), "http://127.0.0.1:")
	args := []string{"--data-dir", filepath.Join(dir, "data"), "--secure-port", secure,
		"--etcd-listen-client-url", strings.Replace(port(), "http://", "https://", 1), "--etcd-listen-peer-urls", port(), "--shutdown-delay", "0s", "--log-level", "error"}
	var readies []time.Duration
	var rss string
	for attempt := range 6 {
		cmd := exec.Command(exe, args...)
		t0 := time.Now()
		must(cmd.Start())
		waitReady(secure, t0)
		if attempt > 0 {
			readies = append(readies, time.Since(t0))
		}
		if attempt == 5 {
			time.Sleep(5 * time.Second) // idle
			rss = fmt.Sprintf("%s (anonymous %s, file %s)", readRSS(cmd.Process.Pid),
				readStatus(cmd.Process.Pid, "RssAnon"), readStatus(cmd.Process.Pid, "RssFile"))
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	sort.Slice(readies, func(i, j int) bool { return readies[i] < readies[j] })
	fmt.Printf("process (%s, embedded etcd, fsync on): ready (exec to /readyz 200) with an existing data dir: median %s, max %s of %d; idle RSS: %s\n", binary,
		readies[len(readies)/2].Round(time.Millisecond), readies[len(readies)-1].Round(time.Millisecond), len(readies), rss)
}

func readRSS(pid int) string { return readStatus(pid, "VmRSS") }

// readStatus is the value of field in /proc/pid/status ("123456 kB"), or "?".
func readStatus(pid int, field string) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

func numCPU() int { return runtimeGOMAXPROCS() }

// watchCacheOn says whether the apiserver measured runs its watch cache (-watch-cache).
var watchCacheOn = true

// onExit stops the apiserver process measured, if any, when the bench gives up.
var onExit = func() {}

func must(err error) {
	if err != nil {
		onExit()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
