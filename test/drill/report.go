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

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Stack names as they appear in report.json.
const (
	stackHACP        = "hacp"
	stackAnchor      = "keepalived+haproxy"
	stackAnchorTuned = "keepalived+haproxy(tuned)"
	stackHACPBGP     = "hacp-bgp"
)

var allStacks = []string{stackHACP, stackAnchor, stackAnchorTuned, stackHACPBGP}

// Scenario names, in the order they run.
const (
	scKillMaster      = "kill-master"
	scRejoin          = "rejoin"
	scKillAPIServer   = "kill-apiserver"
	scGracefulMaster  = "graceful-master"
	scPartitionMaster = "partition-master"
)

var allScenarios = []string{scKillMaster, scRejoin, scKillAPIServer, scGracefulMaster, scPartitionMaster}

// report is report.json: {"stacks": {stack: {scenario: metrics}}}.
type report struct {
	Stacks map[string]map[string]metrics `json:"stacks"`
	// Leaders is the etcd leader just before each fault, per stack and scenario; shown in
	// report.md only.
	Leaders map[string]map[string]string `json:"-"`
	// ProxyPaths is, per stack, issue 22's check of every proxy path through the VIP
	// (--proxy-paths), made before the faults.
	ProxyPaths map[string][]pathResult `json:"proxy_paths,omitempty"`
}

func newReport() *report {
	return &report{Stacks: map[string]map[string]metrics{}, Leaders: map[string]map[string]string{}}
}

func (r *report) setLeader(stack, scenario, leader string) {
	if r.Leaders[stack] == nil {
		r.Leaders[stack] = map[string]string{}
	}
	r.Leaders[stack][scenario] = leader
}

func (r *report) set(stack, scenario string, m metrics) {
	if r.Stacks[stack] == nil {
		r.Stacks[stack] = map[string]metrics{}
	}
	r.Stacks[stack][scenario] = m
}

// timeline holds, per scenario and stack, the acknowledgement times of writes in seconds
// relative to the fault.
type timeline map[string]map[string][]float64

func (t timeline) add(scenario, stack string, acks []float64) {
	if t[scenario] == nil {
		t[scenario] = map[string][]float64{}
	}
	t[scenario][stack] = acks
}

// reportRow is one line of the markdown table: how to read a metric out of metrics.
type reportRow struct {
	name string
	get  func(metrics) (float64, bool)
	// lowerIsBetter rows get a hacp/anchor ratio.
	ratio bool
}

var reportRows = []reportRow{
	{"vip_failover_s", func(m metrics) (float64, bool) { return m.VIPFailoverS, true }, true},
	{"api_downtime_s", func(m metrics) (float64, bool) { return m.APIDowntimeS, true }, true},
	{"failed_requests", func(m metrics) (float64, bool) { return float64(m.FailedRequests), true }, true},
	{"last_failure_s", func(m metrics) (float64, bool) { return m.LastFailureS, true }, true},
	{"watch_gap_s", func(m metrics) (float64, bool) { return m.WatchGapS, true }, true},
	{"split_brain_s", func(m metrics) (float64, bool) { return m.SplitBrainS, true }, false},
	{"handover_overlap_s", func(m metrics) (float64, bool) { return m.HandoverOverlapS, true }, false},
	{"split_brain_after_heal_s", func(m metrics) (float64, bool) {
		if m.SplitBrainAfterHeal == nil {
			return 0, false
		}
		return *m.SplitBrainAfterHeal, true
	}, false},
	{"vip_before_healthy_s", func(m metrics) (float64, bool) {
		if m.VIPBeforeHealthyS == nil {
			return 0, false
		}
		return *m.VIPBeforeHealthyS, true
	}, false},
	{"client_arp_stale_s", func(m metrics) (float64, bool) { return m.ClientARPStaleS, true }, false},
	{"cm_lease_takeover_s", optional(func(m metrics) *float64 { return m.CMLeaseTakeoverS }), false},
	{"scheduler_lease_takeover_s", optional(func(m metrics) *float64 { return m.SchedLeaseTakeoverS }), false},
	{"scale_up_after_fault_s", optional(func(m metrics) *float64 { return m.ScaleUpAfterFaultS }), false},
	{"flunder_watch_gap_s", optional(func(m metrics) *float64 { return m.FlunderWatchGapS }), true},
	{"flunders_acked", optionalInt(func(m metrics) *int { return m.FlundersAcked }), false},
	{"flunders_unseen", optionalInt(func(m metrics) *int { return m.FlundersUnseen }), false},
	{"flunder_failed_requests", optionalInt(func(m metrics) *int { return m.FlunderFailedRequests }), true},
	{"writes_acked", func(m metrics) (float64, bool) { return float64(m.WritesAcked), true }, false},
	{"writes_lost", func(m metrics) (float64, bool) { return float64(m.WritesLost), true }, false},
	{"isolated_writes_accepted", func(m metrics) (float64, bool) {
		if m.IsolatedWrites == nil {
			return 0, false
		}
		return float64(*m.IsolatedWrites), true
	}, false},
}

// optional reads a metric only some runs have.
func optional(f func(metrics) *float64) func(metrics) (float64, bool) {
	return func(m metrics) (float64, bool) {
		if p := f(m); p != nil {
			return *p, true
		}
		return 0, false
	}
}

// optionalInt reads a count only some runs have.
func optionalInt(f func(metrics) *int) func(metrics) (float64, bool) {
	return func(m metrics) (float64, bool) {
		if p := f(m); p != nil {
			return float64(*p), true
		}
		return 0, false
	}
}

func formatValue(v float64) string {
	switch {
	case v < 0:
		return "never"
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// ratio formats hacp/anchor; "—" when either side is missing, "never" or zero.
func ratio(h, a float64) string {
	if h < 0 || a <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", h/a)
}

// markdown renders the report as one table per scenario, columns per stack, and ratios of
// hacp against each anchor.
func (r *report) markdown(header string) string {
	var b strings.Builder
	b.WriteString("# Failover drill\n\n")
	b.WriteString(header)
	b.WriteString("\n")
	var stacks []string
	for _, s := range allStacks {
		if _, ok := r.Stacks[s]; ok {
			stacks = append(stacks, s)
		}
	}
	if lines := r.targetLines(); len(lines) > 0 {
		b.WriteString("## Targets (issues 6, 7 and 19; goals, not assertions)\n\n| goal | issue | hacp | keepalived+haproxy | keepalived+haproxy(tuned) | met |\n|---|---:|---:|---:|---:|---|\n")
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n\n")
	}
	b.WriteString(r.proxyPathsMarkdown(stacks))
	for _, sc := range allScenarios {
		r.writeScenario(&b, sc, stacks)
	}
	return b.String()
}

// writeScenario writes the table of one scenario: a column per stack and per hacp / other
// ratio, a row per metric that some stack has, and the etcd leader before the fault.
func (r *report) writeScenario(b *strings.Builder, sc string, stacks []string) {
	present := false
	for _, s := range stacks {
		if _, ok := r.Stacks[s][sc]; ok {
			present = true
		}
	}
	if !present {
		return
	}
	fmt.Fprintf(b, "## %s\n\n| metric |", sc)
	for _, s := range stacks {
		fmt.Fprintf(b, " %s |", s)
	}
	ratioCols := []string{}
	if slices.Contains(stacks, stackHACP) {
		for _, s := range stacks[1:] {
			if s != stackHACP && s != stackHACPBGP {
				ratioCols = append(ratioCols, s)
			}
		}
	}
	for _, s := range ratioCols {
		fmt.Fprintf(b, " hacp / %s |", s)
	}
	b.WriteString("\n|---|")
	for range len(stacks) + len(ratioCols) {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, row := range reportRows {
		vals := map[string]float64{}
		found := false
		for _, s := range stacks {
			m, ok := r.Stacks[s][sc]
			if !ok {
				continue
			}
			if v, ok := row.get(m); ok {
				vals[s] = v
				found = true
			}
		}
		if !found {
			continue
		}
		fmt.Fprintf(b, "| %s |", row.name)
		for _, s := range stacks {
			if v, ok := vals[s]; ok {
				fmt.Fprintf(b, " %s |", formatValue(v))
			} else {
				b.WriteString(" |")
			}
		}
		for _, s := range ratioCols {
			h, hok := vals[stackHACP]
			a, aok := vals[s]
			if row.ratio && hok && aok {
				fmt.Fprintf(b, " %s |", ratio(h, a))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	r.writeLeaderRow(b, sc, stacks, len(ratioCols))
	b.WriteString("\n")
}

// writeLeaderRow writes the row of the etcd leaders before the fault, if any stack has one.
func (r *report) writeLeaderRow(b *strings.Builder, sc string, stacks []string, ratioCols int) {
	leaders := r.Leaders
	if len(leaders) == 0 {
		return
	}
	var row strings.Builder
	found := false
	for _, s := range stacks {
		l := leaders[s][sc]
		found = found || l != ""
		if l == "" {
			row.WriteString(" |")
		} else {
			fmt.Fprintf(&row, " %s |", l)
		}
	}
	if found {
		fmt.Fprintf(b, "| etcd leader before the fault |%s%s\n", row.String(), strings.Repeat(" |", ratioCols))
	}
}

// proxyPathsMarkdown renders the proxy-path checks as one table, a row per path and a
// column per stack: "ok" (with the attempts it took when more than one) or the error.
func (r *report) proxyPathsMarkdown(stacks []string) string {
	if len(r.ProxyPaths) == 0 {
		return ""
	}
	var cols []string
	for _, s := range allStacks {
		if _, ok := r.ProxyPaths[s]; ok {
			cols = append(cols, s)
		}
	}
	var paths []string
	res := map[string]map[string]pathResult{}
	for _, s := range cols {
		for _, p := range r.ProxyPaths[s] {
			if res[p.Path] == nil {
				res[p.Path] = map[string]pathResult{}
				paths = append(paths, p.Path)
			}
			res[p.Path][s] = p
		}
	}
	var b strings.Builder
	b.WriteString("## Proxy paths through the VIP (issue 22, before the faults)\n\nkubectl in the client's namespace against the VIP; kwok's node server on the client plays the kubelets, sample-apiserver on the client serves flunders through an APIService.\n\n| path |")
	for _, s := range cols {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "| %s |", p)
		for _, s := range cols {
			v, ok := res[p][s]
			switch {
			case !ok:
				b.WriteString(" |")
			case v.OK && v.Attempts > 1:
				fmt.Fprintf(&b, " ok (%d attempts, %.1fs) |", v.Attempts, v.Seconds)
			case v.OK:
				fmt.Fprintf(&b, " ok (%.1fs) |", v.Seconds)
			default:
				fmt.Fprintf(&b, " **FAILED** after %d attempts: %s |", v.Attempts, strings.ReplaceAll(strings.ReplaceAll(v.Error, "|", "\\|"), "\n", " "))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

// target is one goal of issues 6, 7 and 19 for hacp, checked against a run.
type target struct {
	Issue    int
	Scenario string
	Metric   string
	Limit    float64 // hacp's value must be at most this ("never", -1, misses it)
	HalfOf   bool    // and at most half of the guide anchor's value in the same run
}

var targets = []target{
	{6, scKillMaster, "vip_failover_s", 0.5, true},
	{6, scKillMaster, "api_downtime_s", 1.5, true},
	{6, scKillMaster, "writes_lost", 0, false},
	{7, scKillMaster, "failed_requests", 2, false},
	{7, scKillMaster, "last_failure_s", 1.5, false},
	{6, scKillAPIServer, "api_downtime_s", 1.0, true},
	{6, scGracefulMaster, "api_downtime_s", 0.3, true},
	// issue 19: planned handovers no client notices
	{19, scGracefulMaster, "failed_requests", 0, false},
	{19, scGracefulMaster, "api_downtime_s", 0.1, false},
	{19, scGracefulMaster, "split_brain_s", 0, false},
	{19, scRejoin, "failed_requests", 0, false},
	{19, scKillAPIServer, "failed_requests", 1, false},
	{19, scKillAPIServer, "last_failure_s", 0.1, false},
	{19, scKillMaster, "watch_gap_s", 1.5, false},
	{19, scKillAPIServer, "watch_gap_s", 1.5, false},
	{19, scGracefulMaster, "watch_gap_s", 1.5, false},
	{19, scPartitionMaster, "watch_gap_s", 1.5, false},
}

func (r *report) value(stack, scenario, metric string) (float64, bool) {
	m, ok := r.Stacks[stack][scenario]
	if !ok {
		return 0, false
	}
	for _, row := range reportRows {
		if row.name == metric {
			return row.get(m)
		}
	}
	return 0, false
}

// targetLines renders the goals as a table: goal, issue, hacp, the two anchors, met. Goals
// whose scenario did not run are left out.
func (r *report) targetLines() []string {
	var out []string
	for _, t := range targets {
		h, ok := r.value(stackHACP, t.Scenario, t.Metric)
		if !ok {
			continue
		}
		goal := fmt.Sprintf("%s %s <= %s", t.Scenario, t.Metric, formatValue(t.Limit))
		met := h <= t.Limit && h >= 0
		anchor, tuned := "—", "—"
		if a, ok := r.value(stackAnchor, t.Scenario, t.Metric); ok {
			anchor = formatValue(a)
			if t.HalfOf {
				goal += " and <= half the guide anchor's"
				met = met && (a < 0 || h <= a/2)
			}
		}
		if a, ok := r.value(stackAnchorTuned, t.Scenario, t.Metric); ok {
			tuned = formatValue(a)
		}
		verdict := "no"
		if met {
			verdict = "yes"
		}
		out = append(out, fmt.Sprintf("| %s | %d | %s | %s | %s | %s |", goal, t.Issue, formatValue(h), anchor, tuned, verdict))
	}
	return out
}

// write writes report.json and report.md into dir.
func (r *report) write(dir, header string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.markdown(header)), 0o644)
}

var stackColors = map[string]color.Color{
	stackHACP:        color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	stackAnchor:      color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	stackAnchorTuned: color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	stackHACPBGP:     color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// plotPNG draws one panel per scenario: acknowledged writes (cumulative, from the start of
// recording) against seconds since the fault, one line per stack. A flat stretch is time in
// which no write was acknowledged.
func (t timeline) plotPNG() ([]byte, error) {
	var scenarios []string
	for _, sc := range allScenarios {
		if len(t[sc]) > 0 {
			scenarios = append(scenarios, sc)
		}
	}
	if len(scenarios) == 0 {
		return nil, fmt.Errorf("timeline: nothing recorded")
	}
	const cols = 2
	rows := (len(scenarios) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, sc := range scenarios {
		p := plot.New()
		p.Title.Text = sc
		p.X.Label.Text = "seconds since fault"
		p.Y.Label.Text = "acknowledged writes"
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
		for _, st := range allStacks {
			acks, ok := t[sc][st]
			if !ok {
				continue
			}
			acks = slices.Clone(acks)
			slices.Sort(acks)
			pts := make(plotter.XYs, 0, len(acks)+1)
			for j, x := range acks {
				pts = append(pts, plotter.XY{X: x, Y: float64(j + 1)})
			}
			if len(pts) == 0 {
				pts = append(pts, plotter.XY{X: 0, Y: 0})
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			line.Color = stackColors[st]
			line.Width = vg.Points(1.5)
			p.Add(line)
			p.Legend.Add(st, line)
		}
		fault, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: maxCount(t[sc])}})
		if err == nil {
			fault.Color = color.Gray{Y: 0x80}
			fault.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(fault)
		}
		plots[i/cols][i%cols] = p
	}
	const w, h = 12 * vg.Inch, 0
	height := vg.Length(rows) * 4 * vg.Inch
	img := vgimg.New(w, height+h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func maxCount(m map[string][]float64) float64 {
	n := 0
	for _, v := range m {
		n = max(n, len(v))
	}
	return float64(max(n, 1))
}
