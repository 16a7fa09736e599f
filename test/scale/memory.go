package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"k8s.io/client-go/kubernetes"
)

// rssBreakdown is what the peak master's processes were made of when each one's resident
// set was at its largest (the sample of the highest VmRSS, close to VmHWM).
type rssBreakdown struct {
	Master    string    `json:"master"`
	Processes []procMem `json:"processes"`
}

// procMem is one server process's memory: /proc/PID/status at its peak, and the Go
// runtime's numbers from its /metrics, scraped at most metricsEvery before that sample.
type procMem struct {
	Process string  `json:"process"`
	AtS     float64 `json:"at_s"` // when: seconds since the server's start
	HWMMB   float64 `json:"vm_hwm_mb"`
	RSSMB   float64 `json:"vm_rss_mb"`
	AnonMB  float64 `json:"rss_anon_mb"`
	FileMB  float64 `json:"rss_file_mb"`
	ShmemMB float64 `json:"rss_shmem_mb"`
	// DBMapMB: of RssFile, the resident pages of the etcd db's mmap (bbolt's member/snap/db).
	DBMapMB float64 `json:"db_mmap_mb"`
	Go      *goMem  `json:"go,omitempty"`
}

// goMem is the Go runtime's memory as the client_golang Go collector exports it.
type goMem struct {
	HeapInuseMB    float64 `json:"heap_inuse_mb"`
	HeapIdleMB     float64 `json:"heap_idle_mb"`
	HeapReleasedMB float64 `json:"heap_released_mb"`
	StackInuseMB   float64 `json:"stack_inuse_mb"`
	NextGCMB       float64 `json:"next_gc_mb"`
	SysMB          float64 `json:"sys_mb"`
	Goroutines     float64 `json:"goroutines"`
}

// metricsEvery is how often the sampler scrapes the server processes' /metrics: seldom
// enough that kube-apiserver's large exposition costs little.
const metricsEvery = 5 * time.Second

// procStatusMem reads VmHWM, VmRSS, RssAnon, RssFile and RssShmem (kB) from a
// /proc/PID/status text, in MB; ok is false without VmRSS.
func procStatusMem(status string) (procMem, bool) {
	var m procMem
	fields := map[string]*float64{"VmHWM:": &m.HWMMB, "VmRSS:": &m.RSSMB, "RssAnon:": &m.AnonMB, "RssFile:": &m.FileMB, "RssShmem:": &m.ShmemMB}
	seen := false
	for _, line := range strings.Split(status, "\n") {
		key, rest, found := strings.Cut(line, "\t")
		dst, ok := fields[key]
		if !found || !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		*dst = round3(kb / 1024)
		seen = seen || key == "VmRSS:"
	}
	return m, seen
}

// dbMapRSS sums, in MB, the Rss of the mappings of etcd's backend file (a path ending in
// /member/snap/db) in a /proc/PID/smaps text.
func dbMapRSS(smaps string) float64 {
	var kb float64
	inDB := false
	for _, line := range strings.Split(smaps, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			// A mapping's header: address perms offset dev inode [path].
			inDB = len(f) >= 6 && strings.HasSuffix(f[len(f)-1], "/member/snap/db")
			continue
		}
		if inDB && f[0] == "Rss:" && len(f) >= 2 {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				kb += v
			}
		}
	}
	return round3(kb / 1024)
}

// parseGoMetrics picks the Go collector's memory gauges out of a Prometheus text
// exposition; ok is false when heap_inuse is missing.
func parseGoMetrics(text string) (*goMem, bool) {
	g := &goMem{}
	const mb = 1 << 20
	want := map[string]struct {
		dst   *float64
		scale float64
	}{
		"go_memstats_heap_inuse_bytes":    {&g.HeapInuseMB, mb},
		"go_memstats_heap_idle_bytes":     {&g.HeapIdleMB, mb},
		"go_memstats_heap_released_bytes": {&g.HeapReleasedMB, mb},
		"go_memstats_stack_inuse_bytes":   {&g.StackInuseMB, mb},
		"go_memstats_next_gc_bytes":       {&g.NextGCMB, mb},
		"go_memstats_sys_bytes":           {&g.SysMB, mb},
		"go_goroutines":                   {&g.Goroutines, 1},
	}
	found := false
	for _, line := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(line, " ")
		w, known := want[name]
		if !ok || !known {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		*w.dst = round3(v / w.scale)
		found = found || name == "go_memstats_heap_inuse_bytes"
	}
	return g, found
}

// memSampler keeps each server process's largest-RSS sample and the Go numbers of the
// latest /metrics scrape before it. Its maps are guarded by usage.mu.
type memSampler struct {
	start  time.Time
	peak   map[int]procMem
	latest map[int]*goMem
	scrape map[int]func(context.Context) (string, error)
	// With -profile, each apiserver's heap profile is fetched again whenever its resident
	// set grew by peakProfileStep since the last one, into heapFile: the last one written
	// shows what was live (as of the collection before) close to that apiserver's peak.
	heap      map[int]func(context.Context) (string, error)
	heapFile  map[int]string
	profileAt map[int]float64 // pid -> the RSS MB of the last profile fetched
}

// peakProfileStep is how much an apiserver's resident set grows before its peak heap
// profile is fetched again.
const peakProfileStep = 1.05

// newMemSampler prepares, per server process, how to fetch its /metrics: the apiservers
// through their address as the admin, kube-apiserver's etcd on its master's loopback.
func newMemSampler(s *stack) *memSampler {
	ms := &memSampler{start: time.Now(), peak: map[int]procMem{}, latest: map[int]*goMem{}, scrape: map[int]func(context.Context) (string, error){},
		heap: map[int]func(context.Context) (string, error){}, heapFile: map[int]string{}, profileAt: map[int]float64{}}
	for _, m := range s.b.masters {
		for _, p := range s.server[m.Name] {
			pid := p.Cmd.Process.Pid
			if f := s.apiFetcher(m, p, "/metrics"); f != nil {
				ms.scrape[pid] = f
			}
			if p.Name == "etcd" || !s.b.opts.profile {
				continue
			}
			if f := s.apiFetcher(m, p, "/debug/pprof/heap"); f != nil {
				ms.heap[pid] = f
				ms.heapFile[pid] = filepath.Join(s.b.opts.out, "logs", s.name, s.b.profilePrefix()+"peak-heap-"+m.Name+".pprof")
			}
		}
	}
	return ms
}

// profilePeaks fetches the heap profile of each apiserver whose resident set grew by
// peakProfileStep since its last one (see memSampler.heap).
func (u *usage) profilePeaks(ctx context.Context) {
	for pid, fetch := range u.mem.heap {
		u.mu.Lock()
		rss := u.mem.peak[pid].RSSMB
		due := rss > 0 && rss >= u.mem.profileAt[pid]*peakProfileStep
		u.mu.Unlock()
		if !due {
			continue
		}
		body, err := fetch(ctx)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(u.mem.heapFile[pid]), 0o755)
		}
		if err == nil {
			err = os.WriteFile(u.mem.heapFile[pid], []byte(body), 0o644)
		}
		if err != nil {
			continue
		}
		u.mu.Lock()
		u.mem.profileAt[pid] = rss
		u.mu.Unlock()
	}
}

// apiFetcher returns how to GET path from p: kube-apiserver's etcd on its master's loopback
// (plain HTTP), an apiserver through its address as the admin.
func (s *stack) apiFetcher(m *hnetns.Host, p *hnetns.Proc, path string) func(context.Context) (string, error) {
	b := s.b
	if p.Name == "etcd" {
		hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: m.DialContext}}
		return func(ctx context.Context) (string, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:2379"+path, nil)
			if err != nil {
				return "", err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return string(body), err
		}
	}
	cs, err := kubernetes.NewForConfig(restConfig(b.bundle, b.client, apiURL(m), b.bundle.AdminCertPEM, b.bundle.AdminKeyPEM, nil, 1e6))
	if err != nil {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		body, err := cs.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		return string(body), err
	}
}

// scrapeLoop fetches every server process's Go numbers each metricsEvery.
func (u *usage) scrapeLoop(ctx context.Context) {
	for {
		u.mu.Lock()
		frozen := u.frozen
		u.mu.Unlock()
		if frozen {
			return
		}
		for pid, fetch := range u.mem.scrape {
			text, err := fetch(ctx)
			if err != nil {
				continue
			}
			if g, ok := parseGoMetrics(text); ok {
				u.mu.Lock()
				u.mem.latest[pid] = g
				u.mu.Unlock()
			}
		}
		u.profilePeaks(ctx)
		if sleepCtx(ctx, metricsEvery) != nil {
			return
		}
	}
}

// readMem reads pid's status once a sample: its peak resident set (VmHWM) goes to u.hwm,
// and the whole status is kept when its resident set is the largest seen; u.mu is held.
func (u *usage) readMem(pid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	m, ok := procStatusMem(string(b))
	if !ok {
		return
	}
	u.hwm[pid] = max(u.hwm[pid], m.HWMMB)
	if m.RSSMB < u.mem.peak[pid].RSSMB {
		return
	}
	if sm, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid)); err == nil {
		m.DBMapMB = dbMapRSS(string(sm))
	}
	m.Go = u.mem.latest[pid]
	m.AtS = round3(time.Since(u.mem.start).Seconds())
	u.mem.peak[pid] = m
}

// breakdown returns the peak master's processes' memory, in the stack's order.
func (u *usage) breakdown() *rssBreakdown {
	u.mu.Lock()
	defer u.mu.Unlock()
	per := map[string]float64{}
	for pid, m := range u.master {
		per[m] += u.hwm[pid]
	}
	best := ""
	for _, m := range u.s.b.masters {
		if best == "" || per[m.Name] > per[best] {
			best = m.Name
		}
	}
	out := &rssBreakdown{Master: best}
	for _, p := range u.s.server[best] {
		m := u.mem.peak[p.Cmd.Process.Pid]
		m.Process = p.Name
		m.HWMMB = round3(u.hwm[p.Cmd.Process.Pid])
		out.Processes = append(out.Processes, m)
	}
	return out
}
