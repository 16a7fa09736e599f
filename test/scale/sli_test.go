package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name, method, url, want string
	}{
		{"create", "POST", "/api/v1/namespaces/a/configmaps", classMutating},
		{"patch", "PATCH", "/apis/apps/v1/namespaces/a/deployments/d", classMutating},
		{"delete", "DELETE", "/api/v1/nodes/n", classMutating},
		{"get namespaced", "GET", "/api/v1/namespaces/a/configmaps/c", classGet},
		{"get subresource", "GET", "/api/v1/namespaces/a/pods/p/status", classGet},
		{"get cluster-scoped", "GET", "/api/v1/nodes/n", classGet},
		{"get namespace", "GET", "/api/v1/namespaces/a", classGet},
		{"list namespace", "GET", "/api/v1/namespaces/a/pods?limit=500", classListNamespace},
		{"list group namespace", "GET", "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices", classListNamespace},
		{"list cluster", "GET", "/api/v1/pods", classListCluster},
		{"list nodes", "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dn", classListCluster},
		{"list namespaces", "GET", "/api/v1/namespaces", classListCluster},
		{"watch", "GET", "/api/v1/pods?watch=true", ""},
		{"watch namespaced", "GET", "/api/v1/namespaces/a/pods?watch=1", ""},
		{"healthz", "GET", "/healthz", ""},
		{"discovery", "GET", "/api", ""},
		{"group discovery", "GET", "/apis/apps/v1", ""},
		{"options", "OPTIONS", "/api/v1/pods", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := classify(tc.method, u); got != tc.want {
				t.Errorf("classify(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // unsorted: 100..1
	}
	tests := []struct {
		name   string
		values []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 99, 0},
		{"one", []float64{3}, 99, 3},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100", hundred, 100, 100},
		{"p99 of two takes the larger", []float64{1, 2}, 99, 2},
		{"p50 of two takes the smaller", []float64{2, 1}, 50, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.values, tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
	if hundred[0] != 100 {
		t.Error("percentile sorted its input in place")
	}
}

func TestStatsByClass(t *testing.T) {
	now := time.Now()
	s := []sample{
		{Class: classGet, Start: now, Dur: 100 * time.Millisecond, OK: true},
		{Class: classGet, Start: now, Dur: 300 * time.Millisecond, OK: true},
		{Class: classGet, Start: now, Dur: 5 * time.Second, OK: false}, // failures carry no latency
		{Class: classMutating, Start: now, Dur: time.Second, OK: false},
	}
	got := statsByClass(s)
	if len(got) != len(allClasses) {
		t.Fatalf("classes %v, want every class", got)
	}
	if g := got[classGet]; g.Count != 2 || g.Failed != 1 || g.P50S != 0.1 || g.P99S != 0.3 {
		t.Errorf("get = %+v", g)
	}
	if m := got[classMutating]; m.Count != 0 || m.Failed != 1 || m.P99S != 0 {
		t.Errorf("mutating = %+v", m)
	}
}

func TestEvaluateSLO(t *testing.T) {
	good := func() map[string]classStats {
		return map[string]classStats{
			classMutating:      {Count: 10, P99S: 1},
			classGet:           {Count: 10, P99S: 0.5},
			classListNamespace: {Count: 10, P99S: 5},
			classListCluster:   {Count: 10, P99S: 29},
		}
	}
	tests := []struct {
		name    string
		edit    func(map[string]classStats)
		pods    int
		podP99  float64
		missing string // substring of the one missed SLO; "" for none
	}{
		{"all at their bounds", func(map[string]classStats) {}, 10, 5, ""},
		{"mutating over", func(c map[string]classStats) { c[classMutating] = classStats{Count: 1, P99S: 1.001} }, 10, 1, "mutating p99"},
		{"get over", func(c map[string]classStats) { c[classGet] = classStats{Count: 1, P99S: 2} }, 10, 1, "get p99"},
		{"namespace list over", func(c map[string]classStats) { c[classListNamespace] = classStats{Count: 1, P99S: 5.5} }, 10, 1, "list_namespace p99"},
		{"cluster list over", func(c map[string]classStats) { c[classListCluster] = classStats{Count: 1, P99S: 31} }, 10, 1, "list_cluster p99"},
		{"class not measured", func(c map[string]classStats) { c[classGet] = classStats{Failed: 3} }, 10, 1, "get: no successful request"},
		{"pod startup over", func(map[string]classStats) {}, 10, 5.2, "pod startup p99"},
		{"no pods", func(map[string]classStats) {}, 0, 0, "no pod measured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(c)
			missed := evaluateSLO(c, tc.pods, tc.podP99)
			switch {
			case tc.missing == "" && len(missed) != 0:
				t.Errorf("missed %v, want none", missed)
			case tc.missing != "" && (len(missed) != 1 || !strings.Contains(missed[0], tc.missing)):
				t.Errorf("missed %v, want one about %q", missed, tc.missing)
			}
		})
	}
}

func TestEvaluateStorm(t *testing.T) {
	tests := []struct {
		name string
		s    stormReport
		want int
	}{
		{"all goals", stormReport{WatchesReestablishedS: 10}, 0},
		{"slow watches", stormReport{WatchesReestablishedS: 10.5}, 1},
		{"watches never back", stormReport{WatchesReestablishedS: 1, WatchesNotReestablished: 3}, 1},
		{"stale lease", stormReport{StaleLeases: 1}, 1},
		{"lost write", stormReport{WritesLost: 1}, 1},
		{"everything", stormReport{WatchesReestablishedS: 60, StaleLeases: 5, WritesLost: 2}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluateStorm(tc.s); len(got) != tc.want {
				t.Errorf("missed %v, want %d", got, tc.want)
			}
		})
	}
}

// TestReportKeys checks the keys issue 39 fixes for other tools, in the written file.
func TestReportKeys(t *testing.T) {
	fault := time.Now()
	rep := &report{Nodes: 50, Servers: map[string]*serverReport{}}
	for _, n := range allServers {
		s := &serverReport{Pods: 3, PodStartupP99S: 1}
		s.setClasses(statsByClass([]sample{
			{Class: classMutating, Start: fault, Dur: time.Millisecond, OK: true},
			{Class: classGet, Start: fault, Dur: time.Millisecond, OK: true},
			{Class: classListNamespace, Start: fault, Dur: time.Millisecond, OK: true},
			{Class: classListCluster, Start: fault, Dur: time.Millisecond, OK: true},
		}))
		s.Storm.setStorm([]sample{{Class: classGet, Start: fault, OK: false}})
		s.timeline = timelineOf([]sample{{Class: classGet, Start: fault, Dur: time.Millisecond, OK: true}}, fault)
		rep.Servers[n] = s
	}
	dir, b := writeReport(t, rep)
	var got struct {
		Nodes   *int                                  `json:"nodes"`
		Servers map[string]map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Nodes == nil || *got.Nodes != 50 {
		t.Errorf("nodes = %v, want 50", got.Nodes)
	}
	for _, n := range allServers {
		s, ok := got.Servers[n]
		if !ok {
			t.Fatalf("servers has no %q: %s", n, b)
		}
		for _, k := range []string{"slo_met", "mutating_p99_s", "get_p99_s", "list_cluster_p99_s", "pod_startup_p99_s", "peak_rss_mb", "cpu_s", "storm"} {
			if _, ok := s[k]; !ok {
				t.Errorf("%s: no key %q", n, k)
			}
		}
		var storm map[string]json.RawMessage
		if err := json.Unmarshal(s["storm"], &storm); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"watches_reestablished_s", "stale_leases", "failed_requests", "writes_lost"} {
			if _, ok := storm[k]; !ok {
				t.Errorf("%s storm: no key %q", n, k)
			}
		}
		if string(s["slo_met"]) != "true" || string(storm["failed_requests"]) != "1" {
			t.Errorf("%s: slo_met %s, failed_requests %s; want true, 1", n, s["slo_met"], storm["failed_requests"])
		}
	}
	for _, f := range []string{"report.md", "latency.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

func TestParseProc(t *testing.T) {
	stat := "1234 (kube apiserver) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 200"
	if cpu, ok := parseStatCPU(stat); !ok || cpu != 3 {
		t.Errorf("parseStatCPU = %v, %v; want 3 s", cpu, ok)
	}
	if _, ok := parseStatCPU("garbage"); ok {
		t.Error("parseStatCPU accepted garbage")
	}
}

func TestNewPlan(t *testing.T) {
	p := newPlan(50, 3)
	if len(p.namespaces) != 1 || len(p.deployments) != 15 {
		t.Errorf("N=50 quick: %d namespaces, %d deployments; want 1, 15", len(p.namespaces), len(p.deployments))
	}
	p = newPlan(1000, 30)
	if len(p.namespaces) != 10 || len(p.deployments)*deploymentSize != 30000 {
		t.Errorf("N=1000: %d namespaces, %d pods; want 10, 30000", len(p.namespaces), len(p.deployments)*deploymentSize)
	}
}

// writeReport writes rep into a temp dir and returns the dir and report.json's bytes.
func writeReport(t *testing.T, rep *report) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := rep.write(dir, "# header\n\n"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, b
}
