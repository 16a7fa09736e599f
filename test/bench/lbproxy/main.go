// Command lbproxy is the load balancer benchmark: in one run, on loopback, it measures a
// direct connection to the backends, haproxy 2.6 (tcp mode, the same tcp checks) and
// lbproxy, and prints a table with lbproxy/haproxy ratios:
//
//   - bulk throughput: a few long streams from the backends to the client;
//   - connection rate: short connections, each one 64-byte request and response;
//   - latency: p50 and p99 of 64-byte round trips on persistent connections at fixed
//     concurrency;
//   - the proxies' CPU (from /proc/PID/stat) during each load and their peak RSS;
//   - idle connections: -idle connections (8,000) held open through a freshly started
//     proxy, each after one round trip, with the RSS growth per connection, the proxy CPU
//     per opened connection, and the p99 of round trips on a few other connections while
//     the idle ones are held. The bench raises its open-file limit for itself and the
//     proxies it starts (two descriptors per held connection).
//
// The backends and the load generator share this process, and everything shares the
// machine's cores, the same way for all targets. With -base-bin, a second lbproxy build
// (main's, say) is measured in the same rounds, so that a change is compared with what it
// changes in one run. Run from the module root: go run ./test/bench/lbproxy [-d 3s]
// [-base-bin /tmp/base/lbproxy].
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

var (
	duration    = flag.Duration("d", 2*time.Second, "duration of each measurement")
	streams     = flag.Int("streams", 4, "concurrent streams in the throughput test")
	connWorkers = flag.Int("conn-workers", 16, "concurrent clients in the connection-rate test")
	rttConns    = flag.Int("rtt-conns", 16, "persistent connections in the latency test")
	rounds      = flag.Int("rounds", 3, "rounds over all targets; each figure is the median")
	lbEnv       = flag.String("lbproxy-env", "", "extra environment for lbproxy, such as GOMAXPROCS=1 or GOGC=400")
	lbBin       = flag.String("lbproxy-bin", "", "run this lbproxy binary instead of building ./cmd/lbproxy, to compare builds")
	baseBin     = flag.String("base-bin", "", "also measure this lbproxy binary (a build of main, say) as lbproxy-base, interleaved with the others, with a lbproxy/base ratio")
	only        = flag.String("only", "", "measure only this target (direct, haproxy or lbproxy), for profiling; no table")
	loadRows    = flag.Bool("load", true, "measure the throughput, connection-rate and latency rows (false: only the idle row)")
	idleConns   = flag.Int("idle", 8000, "idle connections held open through each proxy in the idle test; 0 skips it")
	idleActive  = flag.Int("idle-active", 4, "connections doing round trips while the idle ones are held")
	idleHold    = flag.Duration("idle-hold", 0, "with -only, keep the idle connections open this long after the measurement, for profiling")
)

const msgSize = 64

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench lbproxy: %v\n", err)
		os.Exit(1)
	}
}

type target struct {
	name  string
	addrs []string // the client round-robins over these
	pid   int      // proxy process, 0 for direct
}

type result struct {
	mbps, connRate   float64
	p50, p99         time.Duration
	cpuBulk, cpuConn float64 // percent of one core
	cpuRTT           float64
	perMB, perConn   float64 // proxy CPU µs per MB moved, per connection
	perRTT           float64 // proxy CPU µs per round trip
	rssPeakMB, rssMB float64
}

func run() error {
	tmp, err := os.MkdirTemp("", "bench-lbproxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	backends, closeBackends, err := startBackends(3)
	if err != nil {
		return err
	}
	defer closeBackends()
	targets := []*target{{name: "direct", addrs: backends}}
	starters, proxies, err := proxyStarters(tmp, backends)
	if err != nil {
		return err
	}
	for _, name := range proxies {
		t, stop, err := starters[name]()
		if err != nil {
			return err
		}
		defer stop()
		targets = append(targets, t)
	}

	fmt.Printf("lbproxy bench: loopback, %d cores, %v per measurement, median of %d interleaved rounds; %d streams, %d connecting clients, %d round-trip connections\n\n",
		numCPU(), *duration, *rounds, *streams, *connWorkers, *rttConns)
	loadBefore := loadavg()
	var measured []*target
	for _, t := range targets {
		if *only == "" || t.name == *only {
			measured = append(measured, t)
		}
	}
	all := measureLoad(measured)
	idle, err := measureIdle(tmp, proxies, starters)
	if err != nil {
		return err
	}
	results := medians(measured, all)
	if *only != "" {
		if r := results[*only]; r != nil {
			fmt.Printf("%s: %+v\n", *only, *r)
		}
		for _, r := range idle[*only] {
			fmt.Printf("%s idle: %+v\n", *only, r)
		}
		return nil
	}
	printTable(results, idle)
	fmt.Printf("\nload average before and after: %s / %s (other work on the machine skews all targets alike, less so the medians)\n", loadBefore, loadavg())
	fmt.Println("ratios: higher is better for throughput and connection rate, lower for the rest.")
	fmt.Println("direct round trips run client and backend goroutines in one process with no proxy pacing them,")
	fmt.Println("so their p99 is not a floor; compare the proxies' p99 with each other.")
	return nil
}

// startBackends starts n backends on loopback; closeAll stops them.
func startBackends(n int) (addrs []string, closeAll func(), err error) {
	var lns []net.Listener
	closeAll = func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		lns = append(lns, ln)
		go serveBackend(ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, closeAll, nil
}

// proxyStarters raises the open-files limit, finds haproxy, builds lbproxy unless -lb-bin
// names it, and returns how to start each proxy in front of backends, and their names.
func proxyStarters(tmp string, backends []string) (map[string]func() (*target, func(), error), []string, error) {
	if err := raiseNoFile(2*(*idleConns) + 1024); err != nil {
		return nil, nil, err
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		return nil, nil, errors.New("haproxy not on PATH (apt-get install haproxy)")
	}
	bin := *lbBin
	if bin == "" {
		bin = filepath.Join(tmp, "lbproxy")
		build := exec.Command("go", "build", "-o", bin, "./cmd/lbproxy")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, nil, fmt.Errorf("build lbproxy (run from the module root): %w", err)
		}
	}
	starters := map[string]func() (*target, func(), error){
		"haproxy": func() (*target, func(), error) { return startHaproxy(tmp, haproxy, backends) },
		"lbproxy": func() (*target, func(), error) { return startLbproxy(tmp, "lbproxy", bin, backends) },
	}
	proxies := []string{"haproxy", "lbproxy"}
	if *baseBin != "" {
		starters["lbproxy-base"] = func() (*target, func(), error) { return startLbproxy(tmp, "lbproxy-base", *baseBin, backends) }
		proxies = append(proxies, "lbproxy-base")
	}
	return starters, proxies, nil
}

// samples are one target's figures, one per round.
type samples struct {
	mbps, connRate, p50, p99, cpuBulk, cpuConn, cpuRTT []float64
	// CPU time per unit of work: µs per MB, per connection, per round trip.
	perMB, perConn, perRTT []float64
}

// measureLoad runs the rounds of throughput, connection rate and round trips, interleaving
// the targets so that load from elsewhere on the machine hits all of them alike.
func measureLoad(measured []*target) map[string]*samples {
	all := map[string]*samples{}
	for _, t := range measured {
		all[t.name] = &samples{}
	}
	for round := 1; *loadRows && round <= *rounds; round++ {
		for _, t := range measured {
			c0 := cpuSeconds(t.pid)
			mbps := throughput(t.addrs, *streams, *duration)
			cpu := cpuSeconds(t.pid) - c0
			all[t.name].mbps = append(all[t.name].mbps, mbps)
			all[t.name].cpuBulk = append(all[t.name].cpuBulk, pct(cpu, *duration))
			all[t.name].perMB = append(all[t.name].perMB, perUnit(cpu, mbps*duration.Seconds()))
		}
		for _, t := range measured {
			c0 := cpuSeconds(t.pid)
			rate := connRate(t.addrs, *connWorkers, *duration)
			cpu := cpuSeconds(t.pid) - c0
			all[t.name].connRate = append(all[t.name].connRate, rate)
			all[t.name].cpuConn = append(all[t.name].cpuConn, pct(cpu, *duration))
			all[t.name].perConn = append(all[t.name].perConn, perUnit(cpu, rate*duration.Seconds()))
		}
		for _, t := range measured {
			c0 := cpuSeconds(t.pid)
			p50, p99, n := latency(t.addrs, *rttConns, *duration)
			cpu := cpuSeconds(t.pid) - c0
			all[t.name].cpuRTT = append(all[t.name].cpuRTT, pct(cpu, *duration))
			all[t.name].perRTT = append(all[t.name].perRTT, perUnit(cpu, float64(n)))
			all[t.name].p50 = append(all[t.name].p50, float64(p50))
			all[t.name].p99 = append(all[t.name].p99, float64(p99))
		}
		fmt.Fprintf(os.Stderr, "round %d of %d done\n", round, *rounds)
	}
	return all
}

// measureIdle runs the idle test. It starts fresh proxies each round, so that the memory a
// proxy held from the loads does not hide what the idle connections take.
func measureIdle(tmp string, proxies []string, starters map[string]func() (*target, func(), error)) (map[string][]idleResult, error) {
	idle := map[string][]idleResult{}
	for round := 1; *idleConns > 0 && round <= *rounds; round++ {
		for _, name := range proxies {
			if *only != "" && *only != name {
				continue
			}
			t, stop, err := starters[name]()
			if err != nil {
				return nil, err
			}
			r, err := idleTest(t, *idleConns, *idleActive, *duration)
			stop()
			if err != nil {
				return nil, err
			}
			if r.failed > 0 {
				fmt.Fprintf(os.Stderr, "idle test: %s: %d of %d connections failed to open; its log ends:\n%s\n", name, r.failed, *idleConns, logTail(filepath.Join(tmp, name+".log"), 5))
			}
			fmt.Fprintf(os.Stderr, "idle %s round %d: %.2f KB/conn, %.1f µs CPU/conn, p99 %v\n", name, round, r.rssPerConnKB, r.openCPU, r.p99)
			idle[name] = append(idle[name], r)
		}
	}
	return idle, nil
}

// medians is each measured target's result: the medians over the rounds, and its RSS.
func medians(measured []*target, all map[string]*samples) map[string]*result {
	results := map[string]*result{}
	for _, t := range measured {
		s := all[t.name]
		r := &result{
			mbps: median(s.mbps), connRate: median(s.connRate),
			p50: time.Duration(median(s.p50)), p99: time.Duration(median(s.p99)),
			cpuBulk: median(s.cpuBulk), cpuConn: median(s.cpuConn), cpuRTT: median(s.cpuRTT),
			perMB: median(s.perMB), perConn: median(s.perConn), perRTT: median(s.perRTT),
		}
		r.rssMB, r.rssPeakMB = rss(t.pid)
		results[t.name] = r
	}
	return results
}

// printTable prints a row per figure and a column per target, with the ratios of lbproxy
// to haproxy and, with -base-bin, to the base build.
func printTable(results map[string]*result, idle map[string][]idleResult) {
	idleMedian := func(name string, f func(idleResult) float64) float64 {
		var v []float64
		for _, r := range idle[name] {
			v = append(v, f(r))
		}
		return median(v)
	}
	type row struct {
		name     string
		noDirect bool
		of       func(name string) float64
	}
	load := func(f func(*result) float64) func(string) float64 {
		return func(name string) float64 { return f(results[name]) }
	}
	rows := []row{
		{"throughput, MB/s", false, load(func(r *result) float64 { return r.mbps })},
		{"connection rate, conn/s", false, load(func(r *result) float64 { return r.connRate })},
		{"round trip p50, µs", false, load(func(r *result) float64 { return us(r.p50) })},
		{"round trip p99, µs", false, load(func(r *result) float64 { return us(r.p99) })},
		{"proxy CPU in throughput, %", true, load(func(r *result) float64 { return r.cpuBulk })},
		{"proxy CPU in conn rate, %", true, load(func(r *result) float64 { return r.cpuConn })},
		{"proxy CPU in round trips, %", true, load(func(r *result) float64 { return r.cpuRTT })},
		{"proxy CPU per MB, µs", true, load(func(r *result) float64 { return r.perMB })},
		{"proxy CPU per connection, µs", true, load(func(r *result) float64 { return r.perConn })},
		{"proxy CPU per round trip, µs", true, load(func(r *result) float64 { return r.perRTT })},
		{"proxy RSS at end, MB", true, load(func(r *result) float64 { return r.rssMB })},
		{"proxy RSS peak, MB", true, load(func(r *result) float64 { return r.rssPeakMB })},
	}
	if *idleConns > 0 {
		idleRow := func(f func(idleResult) float64) func(string) float64 {
			return func(name string) float64 { return idleMedian(name, f) }
		}
		rows = append(rows,
			row{fmt.Sprintf("idle %d: RSS per conn, KB", *idleConns), true, idleRow(func(r idleResult) float64 { return r.rssPerConnKB })},
			row{fmt.Sprintf("idle %d: CPU per open, µs", *idleConns), true, idleRow(func(r idleResult) float64 { return r.openCPU })},
			row{fmt.Sprintf("idle %d: round trip p99, µs", *idleConns), true, idleRow(func(r idleResult) float64 { return us(r.p99) })},
		)
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	header := fmt.Sprintf("| %-32s | %10s | %10s | %10s |", "measure", "direct", "haproxy", "lbproxy")
	rule := fmt.Sprintf("|%s|%s|%s|%s|", strings.Repeat("-", 34), strings.Repeat("-", 12), strings.Repeat("-", 12), strings.Repeat("-", 12))
	if *baseBin != "" {
		header += fmt.Sprintf(" %12s |", "lbproxy-base")
		rule += strings.Repeat("-", 14) + "|"
	}
	header += fmt.Sprintf(" %16s |", "lbproxy/haproxy")
	rule += strings.Repeat("-", 18) + "|"
	if *baseBin != "" {
		header += fmt.Sprintf(" %13s |", "lbproxy/base")
		rule += strings.Repeat("-", 15) + "|"
	}
	fmt.Println(header)
	fmt.Println(rule)
	for _, r := range rows {
		dcol := fmt.Sprintf("%10.0f", r.of("direct"))
		if r.noDirect {
			dcol = fmt.Sprintf("%10s", "-")
		}
		h, l := r.of("haproxy"), r.of("lbproxy")
		line := fmt.Sprintf("| %-32s | %s | %10.1f | %10.1f |", r.name, dcol, h, l)
		if *baseBin != "" {
			line += fmt.Sprintf(" %12.1f |", r.of("lbproxy-base"))
		}
		line += fmt.Sprintf(" %16s |", ratio(l, h))
		if *baseBin != "" {
			line += fmt.Sprintf(" %13s |", ratio(l, r.of("lbproxy-base")))
		}
		fmt.Println(line)
	}
}

// serveBackend serves each connection by its first byte: 'S' streams 64 KiB writes until
// the client leaves; 'E' echoes 64-byte messages. A connection that sends nothing (a tcp
// health check) is closed.
func serveBackend(ln net.Listener) {
	buf := make([]byte, 64<<10)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var op [1]byte
			if _, err := io.ReadFull(c, op[:]); err != nil {
				return
			}
			switch op[0] {
			case 'S':
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			case 'E':
				var m [msgSize]byte
				for {
					if _, err := io.ReadFull(c, m[:]); err != nil {
						return
					}
					if _, err := c.Write(m[:]); err != nil {
						return
					}
				}
			}
		}()
	}
}

// startHaproxy starts haproxy in tcp mode over backends, with the same checks as lbproxy,
// and waits until a round trip through it works.
func startHaproxy(dir, bin string, backends []string) (*target, func(), error) {
	port := freePort()
	cfg := fmt.Sprintf(`global
  maxconn %d
defaults
  mode tcp
  timeout connect 300ms
  timeout client 10m
  timeout server 10m
frontend fe
  bind %s
  default_backend be
backend be
  balance roundrobin
  default-server check inter 2s fastinter 500ms rise 2 fall 2
`, maxConn(), port)
	for i, b := range backends {
		cfg += fmt.Sprintf("  server b%d %s\n", i, b)
	}
	cfgFile := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return nil, nil, err
	}
	return startProxy(dir, "haproxy", nil, bin, "-db", "-f", cfgFile)(port)
}

// startLbproxy starts lbproxy over backends with haproxy's settings and waits until a
// round trip through it works.
func startLbproxy(dir, name, bin string, backends []string) (*target, func(), error) {
	port := freePort()
	args := []string{"--listen", port, "--check-mode", "tcp", "--check-interval", "2s", "--check-fast-interval", "500ms",
		"--rise", "2", "--fall", "2", "--connect-timeout", "300ms", "--maxconn", strconv.Itoa(maxConn()), "--log-level", "warn"}
	for _, b := range backends {
		args = append(args, "--backend", b)
	}
	var env []string
	if *lbEnv != "" {
		env = strings.Fields(*lbEnv)
	}
	return startProxy(dir, name, env, bin, args...)(port)
}

// maxConn is the proxies' connection limit: above what any test holds.
func maxConn() int { return max(9000, *idleConns+1000) }

func startProxy(dir, name string, env []string, bin string, args ...string) func(port string) (*target, func(), error) {
	return func(port string) (*target, func(), error) {
		cmd, err := start(dir, name, env, bin, args...)
		if err != nil {
			return nil, nil, err
		}
		if err := waitReady(port); err != nil {
			stop(cmd)
			log, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			return nil, nil, fmt.Errorf("%s: %w\n%s", name, err, log)
		}
		return &target{name: name, addrs: []string{port}, pid: cmd.Process.Pid}, func() { stop(cmd) }, nil
	}
}

// raiseNoFile raises this process's open-file limit to at least n (the soft limit to the
// hard one, and the hard one too when allowed); the proxies inherit it.
func raiseNoFile(n int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	want := lim
	want.Cur = max(lim.Cur, min(lim.Max, uint64(n)))
	if want.Cur < uint64(n) {
		want.Cur, want.Max = uint64(n), uint64(n)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		return fmt.Errorf("raise the open-file limit to %d (hard limit %d; use -idle with fewer connections): %w", n, lim.Max, err)
	}
	return nil
}

// idleResult is one idle-connections measurement of a freshly started proxy.
type idleResult struct {
	rssPerConnKB float64 // RSS growth per held connection
	openCPU      float64 // proxy CPU µs per opened connection
	p99          time.Duration
	failed       int
}

// idleTest opens n connections through t, each after one round trip so that the proxy's
// session is established, holds them, and measures round trips on a few other
// connections meanwhile. Memory is the RSS growth from the fresh proxy's.
func idleTest(t *target, n, active int, d time.Duration) (idleResult, error) {
	var r idleResult
	rss0, _ := rss(t.pid)
	c0 := cpuSeconds(t.pid)
	conns := make([]net.Conn, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	const openers = 32
	for w := range openers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := make([]byte, 1+msgSize)
			msg[0] = 'E'
			resp := make([]byte, msgSize)
			for i := w; i < n; i += openers {
				c, err := net.DialTimeout("tcp", t.addrs[0], 5*time.Second)
				if err == nil {
					_ = c.SetDeadline(time.Now().Add(5 * time.Second))
					if _, err = c.Write(msg); err == nil {
						_, err = io.ReadFull(c, resp)
					}
					_ = c.SetDeadline(time.Time{})
				}
				if err != nil {
					failed.Add(1)
					if c != nil {
						c.Close()
					}
					continue
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	r.failed = int(failed.Load())
	opened := n - r.failed
	if opened == 0 {
		return r, fmt.Errorf("%s: no idle connection opened", t.name)
	}
	r.openCPU = perUnit(cpuSeconds(t.pid)-c0, float64(opened))
	_, r.p99, _ = latency(t.addrs, active, d)
	rss1, _ := rss(t.pid)
	r.rssPerConnKB = (rss1 - rss0) * 1024 / float64(opened)
	if *idleHold > 0 {
		fmt.Fprintf(os.Stderr, "%s: holding %d idle connections for %v (pid %d)\n", t.name, opened, *idleHold, t.pid)
		time.Sleep(*idleHold)
	}
	return r, nil
}

func throughput(addrs []string, n int, d time.Duration) float64 {
	var total atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addrs[i%len(addrs)])
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = c.Write([]byte{'S'})
			_ = c.SetReadDeadline(deadline)
			buf := make([]byte, 256<<10)
			for {
				k, err := c.Read(buf)
				total.Add(int64(k))
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(total.Load()) / d.Seconds() / 1e6
}

func connRate(addrs []string, workers int, d time.Duration) float64 {
	var done, failed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := make([]byte, 1+msgSize)
			msg[0] = 'E'
			resp := make([]byte, msgSize)
			for i := w; time.Now().Before(deadline); i++ {
				c, err := net.DialTimeout("tcp", addrs[i%len(addrs)], 5*time.Second)
				if err != nil {
					failed.Add(1)
					continue
				}
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = c.Write(msg)
				if err == nil {
					_, err = io.ReadFull(c, resp)
				}
				c.Close()
				if err != nil {
					failed.Add(1)
					continue
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		fmt.Fprintf(os.Stderr, "connection rate: %d failed connections\n", f)
	}
	return float64(done.Load()) / d.Seconds()
}

func latency(addrs []string, conns int, d time.Duration) (p50, p99 time.Duration, n int) {
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addrs[i%len(addrs)])
			if err != nil {
				return
			}
			defer c.Close()
			if _, err := c.Write([]byte{'E'}); err != nil {
				return
			}
			msg := make([]byte, msgSize)
			var local []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if _, err := c.Write(msg); err != nil {
					return
				}
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(all) == 0 {
		return 0, 0, 0
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return all[len(all)/2], all[len(all)*99/100], len(all)
}

func start(dir, name string, env []string, bin string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cmd, nil
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// waitReady waits until a round trip through addr works.
func waitReady(addr string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			msg := make([]byte, 1+msgSize)
			msg[0] = 'E'
			_, err = c.Write(msg)
			if err == nil {
				_, err = io.ReadFull(c, msg[:msgSize])
			}
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// cpuSeconds is the user+system CPU time of pid (0 for none).
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// rss returns the current and peak resident set of pid in MB.
func rss(pid int) (cur, peak float64) {
	if pid == 0 {
		return 0, 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			cur = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return cur, peak
}

func pct(cpu float64, d time.Duration) float64 { return 100 * cpu / d.Seconds() }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func numCPU() int {
	data, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, strings.Count(string(data), "processor\t:"))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	return v[len(v)/2]
}

func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// logTail returns the last n lines of a file.
func logTail(file string, n int) string {
	data, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// perUnit is CPU seconds per unit of work, in µs.
func perUnit(cpu, units float64) float64 {
	if units == 0 {
		return 0
	}
	return cpu / units * 1e6
}
