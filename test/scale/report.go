package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// report is _output/scale/report.json: one entry per server, all from one run. With
// -search, nodes and servers are the rows at the N chooseN picked (nodes_because says
// why) and search holds every server's ladder.
type report struct {
	Nodes        int                      `json:"nodes"`
	NodesBecause string                   `json:"nodes_because,omitempty"`
	Quick        bool                     `json:"quick"`
	PodsPerNode  int                      `json:"pods_per_node"`
	Servers      map[string]*serverReport `json:"servers"`
	SearchLadder []int                    `json:"search_ladder,omitempty"`
	StepBudgetS  float64                  `json:"step_budget_s,omitempty"`
	Search       map[string]*searchServer `json:"search,omitempty"`
}

// serverReport is one server's measurements (keys fixed by issue 39).
type serverReport struct {
	SLOMet            bool                  `json:"slo_met"`
	SLOMissed         []string              `json:"slo_missed,omitempty"`
	MutatingP50S      float64               `json:"mutating_p50_s"`
	MutatingP99S      float64               `json:"mutating_p99_s"`
	GetP50S           float64               `json:"get_p50_s"`
	GetP99S           float64               `json:"get_p99_s"`
	ListNamespaceP50S float64               `json:"list_namespace_p50_s"`
	ListNamespaceP99S float64               `json:"list_namespace_p99_s"`
	ListClusterP50S   float64               `json:"list_cluster_p50_s"`
	ListClusterP99S   float64               `json:"list_cluster_p99_s"`
	Requests          map[string]classStats `json:"requests"`
	Pods              int                   `json:"pods_measured"`
	PodStartupP50S    float64               `json:"pod_startup_p50_s"`
	PodStartupP99S    float64               `json:"pod_startup_p99_s"`
	PeakRSSMB         float64               `json:"peak_rss_mb"`
	// RSSBreakdown: what the peak master's server processes were made of (issue 39's
	// question of where the memory goes; not one of its fixed keys).
	RSSBreakdown *rssBreakdown `json:"rss_breakdown,omitempty"`
	CPUS         float64       `json:"cpu_s"`
	// OtherCPUS: the controller-managers, schedulers, kwok, vipd and lbproxy; BenchCPUS:
	// the bench process (node agents, load, recorders); both until the fault, as CPUS.
	OtherCPUS    float64     `json:"other_cpu_s"`
	BenchCPUS    float64     `json:"bench_cpu_s"`
	EtcdDBMB     float64     `json:"etcd_db_mb"`      // in use, m2's member
	EtcdDBFileMB float64     `json:"etcd_db_file_mb"` // the largest member's backend file
	WatchEvents  int64       `json:"watch_events"`
	Storm        stormReport `json:"storm"`
	Error        string      `json:"error,omitempty"`

	// timeline: every sample's (seconds since the fault, latency), per class, for the PNG.
	timeline map[string]plotter.XYs
}

// stormReport is what killing the VIP master at steady load did.
type stormReport struct {
	Met                     bool                  `json:"met"`
	Missed                  []string              `json:"missed,omitempty"`
	WatchesReestablishedS   float64               `json:"watches_reestablished_s"`
	WatchesNotReestablished int                   `json:"watches_not_reestablished"`
	StaleLeases             int                   `json:"stale_leases"`
	FailedRequests          int                   `json:"failed_requests"`
	FailedByClass           map[string]int        `json:"failed_requests_by_class"`
	WritesLost              int                   `json:"writes_lost"`
	WritesAcked             int                   `json:"writes_acked"`
	Recovery                map[string]classStats `json:"recovery"`
	// EtcdLeaderKilled: the etcd leader was moved to the victim before the fault.
	EtcdLeaderKilled bool `json:"etcd_leader_killed"`
}

// setClasses fills the p50/p99 fields and the SLO verdict from the steady-state samples.
func (s *serverReport) setClasses(classes map[string]classStats) {
	s.Requests = classes
	s.MutatingP50S, s.MutatingP99S = classes[classMutating].P50S, classes[classMutating].P99S
	s.GetP50S, s.GetP99S = classes[classGet].P50S, classes[classGet].P99S
	s.ListNamespaceP50S, s.ListNamespaceP99S = classes[classListNamespace].P50S, classes[classListNamespace].P99S
	s.ListClusterP50S, s.ListClusterP99S = classes[classListCluster].P50S, classes[classListCluster].P99S
	s.SLOMissed = evaluateSLO(classes, s.Pods, s.PodStartupP99S)
	s.SLOMet = len(s.SLOMissed) == 0 && s.Error == ""
}

// setStorm fills the storm's failures per class and its verdict.
func (s *stormReport) setStorm(recovery []sample) {
	s.Recovery = statsByClass(recovery)
	s.FailedByClass = map[string]int{}
	s.FailedRequests = 0
	for c, st := range s.Recovery {
		s.FailedByClass[c] = st.Failed
		s.FailedRequests += st.Failed
	}
	s.Missed = evaluateStorm(*s)
	s.Met = len(s.Missed) == 0
}

// timelineOf turns samples into per-class points relative to fault.
func timelineOf(samples []sample, fault time.Time) map[string]plotter.XYs {
	out := map[string]plotter.XYs{}
	for _, s := range samples {
		if !s.OK {
			continue
		}
		out[s.Class] = append(out[s.Class], plotter.XY{X: s.Start.Sub(fault).Seconds(), Y: s.Dur.Seconds()})
	}
	return out
}

// write writes report.json, report.md and latency.png into dir.
func (r *report) write(dir, header string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := header + r.markdown()
	if r.Search != nil {
		md = header + r.searchMarkdown() + r.markdown()
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md), 0o644); err != nil {
		return err
	}
	png, err := r.plotPNG()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "latency.png"), png, 0o644)
}

func (r *report) serverNames() []string { return inServerOrder(r.Servers) }

// inServerOrder is the servers that are keys of m, in allServers' order.
func inServerOrder[V any](m map[string]V) []string {
	var names []string
	for _, n := range allServers {
		if _, ok := m[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// markdown is the table of report.md: one column per server.
func (r *report) markdown() string {
	names := r.serverNames()
	var b strings.Builder
	fmt.Fprintf(&b, "| N=%d | %s |\n|---|%s\n", r.Nodes, strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	row := func(label string, f func(s *serverReport) string) {
		cells := make([]string, len(names))
		for i, n := range names {
			cells[i] = f(r.Servers[n])
		}
		fmt.Fprintf(&b, "| %s | %s |\n", label, strings.Join(cells, " | "))
	}
	sec := func(v float64) string { return fmt.Sprintf("%.3f", v) }
	row("SLOs met", func(s *serverReport) string { return yesNo(s.SLOMet, s.SLOMissed) })
	for _, c := range allClasses {
		row(c+" p50 / p99 s (n)", func(s *serverReport) string {
			st := s.Requests[c]
			return fmt.Sprintf("%s / %s (%d)", sec(st.P50S), sec(st.P99S), st.Count)
		})
	}
	row("pod startup p50 / p99 s (pods)", func(s *serverReport) string {
		return fmt.Sprintf("%s / %s (%d)", sec(s.PodStartupP50S), sec(s.PodStartupP99S), s.Pods)
	})
	row("peak RSS MB (one master)", func(s *serverReport) string { return fmt.Sprintf("%.0f", s.PeakRSSMB) })
	row("CPU s (three masters)", func(s *serverReport) string { return fmt.Sprintf("%.1f", s.CPUS) })
	row("CPU s: controllers, scheduler, kwok, vipd, lbproxy / the bench's agents and load", func(s *serverReport) string {
		return fmt.Sprintf("%.1f / %.1f", s.OtherCPUS, s.BenchCPUS)
	})
	row("etcd db MB in use / file", func(s *serverReport) string { return fmt.Sprintf("%.1f / %.1f", s.EtcdDBMB, s.EtcdDBFileMB) })
	row("watch events delivered", func(s *serverReport) string { return fmt.Sprint(s.WatchEvents) })
	row("storm: goals met", func(s *serverReport) string { return yesNo(s.Storm.Met, s.Storm.Missed) })
	row("storm: etcd leader killed with the VIP master", func(s *serverReport) string { return yesNo(s.Storm.EtcdLeaderKilled, []string{"left where it was"}) })
	row("storm: watches re-established s", func(s *serverReport) string {
		return fmt.Sprintf("%s (%d nodes not)", sec(s.Storm.WatchesReestablishedS), s.Storm.WatchesNotReestablished)
	})
	row("storm: Leases stale > 40 s", func(s *serverReport) string { return fmt.Sprint(s.Storm.StaleLeases) })
	row("storm: failed requests (mut/get/ns/cluster)", func(s *serverReport) string {
		f := s.Storm.FailedByClass
		return fmt.Sprintf("%d (%d/%d/%d/%d)", s.Storm.FailedRequests, f[classMutating], f[classGet], f[classListNamespace], f[classListCluster])
	})
	row("storm: writes lost / acked", func(s *serverReport) string {
		return fmt.Sprintf("%d / %d", s.Storm.WritesLost, s.Storm.WritesAcked)
	})
	row("storm: mutating / get p99 s in recovery", func(s *serverReport) string {
		return fmt.Sprintf("%s / %s", sec(s.Storm.Recovery[classMutating].P99S), sec(s.Storm.Recovery[classGet].P99S))
	})
	row("error", func(s *serverReport) string { return strings.ReplaceAll(firstLine(s.Error), "|", "/") })
	return b.String()
}

func yesNo(ok bool, missed []string) string {
	if ok {
		return "yes"
	}
	return "no: " + strings.ReplaceAll(strings.Join(missed, "; "), "|", "/")
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

var classColors = map[string]color.Color{
	classMutating:      color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	classGet:           color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	classListNamespace: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	classListCluster:   color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// plotPNG draws one panel per server: every successful request's latency against seconds
// since the VIP master was killed, coloured by class.
func (r *report) plotPNG() ([]byte, error) {
	names := r.serverNames()
	if len(names) == 0 {
		return nil, fmt.Errorf("latency plot: no server")
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, len(names))}
	for i, n := range names {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, %d nodes", n, r.Nodes)
		p.X.Label.Text = "seconds since the VIP master was killed"
		p.Y.Label.Text = "request latency (s)"
		p.Legend.Top, p.Legend.Left = true, true
		p.Add(plotter.NewGrid())
		for _, c := range allClasses {
			pts := r.Servers[n].timeline[c]
			if len(pts) == 0 {
				continue
			}
			pts = slices.Clone(pts)
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = classColors[c]
			sc.GlyphStyle.Radius = vg.Points(1.5)
			p.Add(sc)
			p.Legend.Add(c, sc)
		}
		plots[0][i] = p
	}
	img := vgimg.New(vg.Length(len(names))*7*vg.Inch, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(names), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for j, p := range plots[0] {
		p.Draw(canvases[0][j])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
