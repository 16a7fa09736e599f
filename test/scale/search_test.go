package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseLadder(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"100", []int{100}, ""},
		{"100,200, 400 ,1000", []int{100, 200, 400, 1000}, ""},
		{"100,100", nil, "must increase"},
		{"200,100", nil, "must increase"},
		{"0,10", nil, "not a positive"},
		{"-5", nil, "not a positive"},
		{"10,,20", nil, "not a positive"},
		{"ten", nil, "not a positive"},
	}
	for _, tc := range tests {
		got, err := parseLadder(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseLadder(%q) error %v, want one with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseLadder(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// ladderOf builds a server's ladder from verdicts: 'y' carried, 's' SLO missed, 't' storm
// missed, 'e' error, one per N of ns.
func ladderOf(ns []int, verdicts string) *searchServer {
	ss := &searchServer{Steps: []searchStep{}}
	for i, v := range verdicts {
		st := searchStep{Nodes: ns[i], SLOMet: v != 's' && v != 'e', StormMet: v != 't' && v != 'e', Report: &serverReport{Requests: map[string]classStats{}}}
		if v == 'e' {
			st.Error = "did not finish in 20m0s"
		}
		st.Report.SLOMet, st.Report.Storm.Met, st.Report.Error = st.SLOMet, st.StormMet, st.Error
		if !st.SLOMet {
			st.Report.SLOMissed = []string{"mutating p99 1.2 s > 1 s"}
		}
		ss.Steps = append(ss.Steps, st)
		if st.carried() {
			ss.LargestN = ns[i]
		}
	}
	return ss
}

func TestChooseN(t *testing.T) {
	ns := []int{100, 200, 400, 1000}
	both := []string{serverHACP, serverKube}
	tests := []struct {
		name       string
		hacp, kube string // verdicts; "-" no entry for the server
		servers    []string
		want       int
		wantWhy    []string
	}{
		{"both carry all", "yyyy", "yyyy", both, 1000, []string{"largest N every server carried"}},
		{"same stop", "yys", "yye", both, 200, []string{"every server carried"}},
		{"hacp carries more", "yyys", "yyt", both, 200, []string{"every server carried", "hacp carried up to 400"}},
		{"kube carries more", "ys", "yyyy", both, 100, []string{"kube-apiserver carried up to 1000"}},
		{"neither carries the first", "s", "e", both, 100, []string{"no N carried by every server", "largest N every server ran"}},
		{"one carries none", "yyys", "t", both, 100, []string{"no N carried", "hacp carried up to 400"}},
		{"cut short before kube", "yy", "", both, 200, []string{"cut short"}},
		{"one server", "yyt", "-", []string{serverHACP}, 200, []string{"largest N hacp carried"}},
		{"nothing ran", "", "", both, 0, []string{"cut short"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			search := map[string]*searchServer{serverHACP: ladderOf(ns, tc.hacp)}
			if tc.kube != "-" {
				search[serverKube] = ladderOf(ns, tc.kube)
			}
			n, why := chooseN(search, tc.servers)
			if n != tc.want {
				t.Errorf("N = %d (%s), want %d", n, why, tc.want)
			}
			for _, w := range tc.wantWhy {
				if !strings.Contains(why, w) {
					t.Errorf("why %q lacks %q", why, w)
				}
			}
			rows := rowsAt(search, n)
			for _, s := range tc.servers {
				ran := slices.ContainsFunc(search[s].Steps, func(st searchStep) bool { return st.Nodes == n })
				if _, ok := rows[s]; ok != ran {
					t.Errorf("rows at %d have %s: %v, want %v", n, s, ok, ran)
				}
			}
		})
	}
}

// TestSearchReportShape: report.json keeps issue 39's top level (nodes, servers with each
// server's row at that N) and adds search with every server's ladder; report.md has the
// ladder table and the full table at N.
func TestSearchReportShape(t *testing.T) {
	ns := []int{10, 20, 40}
	search := map[string]*searchServer{serverHACP: ladderOf(ns, "yys"), serverKube: ladderOf(ns, "ys")}
	rep := &report{Quick: true, PodsPerNode: 3, Search: search, SearchLadder: ns, StepBudgetS: (20 * time.Minute).Seconds()}
	rep.Nodes, rep.NodesBecause = chooseN(search, allServers)
	rep.Servers = rowsAt(search, rep.Nodes)
	dir, b := writeReport(t, rep)
	var got struct {
		Nodes   int                        `json:"nodes"`
		Servers map[string]json.RawMessage `json:"servers"`
		Search  map[string]struct {
			LargestN int               `json:"largest_n"`
			Steps    []json.RawMessage `json:"steps"`
		} `json:"search"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Nodes != 10 || len(got.Servers) != 2 || got.Servers[serverHACP] == nil || got.Servers[serverKube] == nil {
		t.Fatalf("top level: nodes %d, servers %v; want 10 and both servers", got.Nodes, keys(got.Servers))
	}
	if got.Search[serverHACP].LargestN != 20 || got.Search[serverKube].LargestN != 10 {
		t.Errorf("largest_n: %+v, want hacp 20, kube-apiserver 10", got.Search)
	}
	if len(got.Search[serverHACP].Steps) != 3 || len(got.Search[serverKube].Steps) != 2 {
		t.Errorf("steps: hacp %d, kube-apiserver %d; want 3 and 2", len(got.Search[serverHACP].Steps), len(got.Search[serverKube].Steps))
	}
	var step map[string]any
	if err := json.Unmarshal(got.Search[serverKube].Steps[1], &step); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodes", "slo_met", "storm_met", "error", "duration_s", "report"} {
		if _, ok := step[k]; !ok {
			t.Errorf("step lacks %q: %v", k, step)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| 40 | not carried", "| not run |", "| **largest N carried** | 20 | 10 |", "## At N=10", "hacp carried up to 20", "| N=10 | hacp | kube-apiserver |"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "latency.png")); err != nil || fi.Size() == 0 {
		t.Errorf("latency.png: %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestProfileSeconds(t *testing.T) {
	for steady, want := range map[time.Duration]int{time.Minute: 20, 15 * time.Second: 12, 2 * time.Second: 1} {
		if got := profileSeconds(steady); got != want {
			t.Errorf("profileSeconds(%v) = %d, want %d", steady, got, want)
		}
	}
}
