package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// searchServer is one server's ladder in report.json's "search".
type searchServer struct {
	LargestN int          `json:"largest_n"` // the largest N carried; 0: none
	Steps    []searchStep `json:"steps"`
}

// searchStep is one server measured at one N: carried when its SLOs and storm goals were
// met and it neither failed nor ran past the step budget.
type searchStep struct {
	Nodes     int           `json:"nodes"`
	SLOMet    bool          `json:"slo_met"`
	StormMet  bool          `json:"storm_met"`
	Error     string        `json:"error"`
	DurationS float64       `json:"duration_s"`
	Report    *serverReport `json:"report"` // the step's whole row
}

func (s searchStep) carried() bool { return s.SLOMet && s.StormMet && s.Error == "" }

// parseLadder reads -search: comma-separated, strictly increasing positive Ns ("" is no search).
func parseLadder(v string) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var ladder []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number of nodes", strings.TrimSpace(f))
		}
		if len(ladder) > 0 && n <= ladder[len(ladder)-1] {
			return nil, fmt.Errorf("%d after %d: the ladder must increase", n, ladder[len(ladder)-1])
		}
		ladder = append(ladder, n)
	}
	return ladder, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// search climbs the ladder step by step, at each N every server still climbing one after
// the other (so that both servers' rows at an N are close in time and an interrupted run
// still has both at the lower Ns); a server stops at its first step not carried.
func (b *bench) search(ctx context.Context) *report {
	rep := &report{Quick: b.opts.quick, PodsPerNode: b.opts.podsPerNode, Search: map[string]*searchServer{},
		SearchLadder: b.opts.search, StepBudgetS: b.opts.stepBudget.Seconds()}
	climbing := slices.Clone(b.opts.servers)
	for _, name := range climbing {
		rep.Search[name] = &searchServer{Steps: []searchStep{}}
	}
	for _, n := range b.opts.search {
		for _, name := range slices.Clone(climbing) {
			if ctx.Err() != nil {
				break
			}
			st := b.step(ctx, name, n)
			ss := rep.Search[name]
			ss.Steps = append(ss.Steps, st)
			if st.carried() {
				ss.LargestN = n
				continue
			}
			climbing = slices.DeleteFunc(climbing, func(s string) bool { return s == name })
			b.progress("%s: N=%d not carried; its ladder stops (largest carried: %d)", name, n, ss.LargestN)
		}
	}
	rep.Nodes, rep.NodesBecause = chooseN(rep.Search, b.opts.servers)
	rep.Servers = rowsAt(rep.Search, rep.Nodes)
	return rep
}

// step measures name at n nodes on a fresh stack, within the step budget.
func (b *bench) step(ctx context.Context, name string, n int) searchStep {
	b.opts.nodes = n
	// A fresh stack: no data of the server's previous step (newStack reuses the dir).
	if err := os.RemoveAll(filepath.Join(b.dir, name)); err != nil {
		b.progress("%s: removing the previous step's dir: %v", name, err)
	}
	b.progress("%s: search step N=%d (budget %v)", name, n, b.opts.stepBudget)
	sctx, cancel := context.WithTimeout(ctx, b.opts.stepBudget)
	defer cancel()
	start := time.Now()
	rep := b.measure(sctx, name)
	if errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		rep.Error = strings.TrimSuffix(fmt.Sprintf("did not finish in %v: %s", b.opts.stepBudget, rep.Error), ": ")
		rep.SLOMet, rep.Storm.Met = false, false
	}
	return searchStep{Nodes: n, SLOMet: rep.SLOMet, StormMet: rep.Storm.Met, Error: rep.Error,
		DurationS: round3(time.Since(start).Seconds()), Report: rep}
}

// chooseN picks the N of report.json's top-level rows: the largest N every server carried;
// failing that the largest N every server has a row at; failing that (a run cut short) the
// largest N any server has a row at. It says why, and where a server carried more.
func chooseN(search map[string]*searchServer, servers []string) (int, string) {
	var names []string
	for _, s := range servers {
		if search[s] != nil {
			names = append(names, s)
		}
	}
	common := func(ok func(searchStep) bool) int {
		best := 0
		for _, st := range stepsOf(search, names) {
			if best < st.Nodes && everyServer(search, names, st.Nodes, ok) {
				best = st.Nodes
			}
		}
		return best
	}
	var why string
	n := common(searchStep.carried)
	switch {
	case n > 0:
		why = fmt.Sprintf("the largest N %s carried", allOf(names))
	case common(func(searchStep) bool { return true }) > 0:
		n = common(func(searchStep) bool { return true })
		why = fmt.Sprintf("no N carried by %s; the largest N %s ran", allOf(names), allOf(names))
	default:
		for _, st := range stepsOf(search, names) {
			n = max(n, st.Nodes)
		}
		why = "the run was cut short: the largest N any server ran"
	}
	var more []string
	for _, s := range names {
		if search[s].LargestN > n {
			more = append(more, fmt.Sprintf("%s carried up to %d", s, search[s].LargestN))
		}
	}
	if len(more) > 0 {
		why += "; " + strings.Join(more, ", ")
	}
	return n, why
}

func allOf(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return "every server"
}

func stepsOf(search map[string]*searchServer, names []string) []searchStep {
	var all []searchStep
	for _, s := range names {
		all = append(all, search[s].Steps...)
	}
	return all
}

// everyServer reports whether every server has a step at n that satisfies ok.
func everyServer(search map[string]*searchServer, names []string, n int, ok func(searchStep) bool) bool {
	for _, s := range names {
		i := slices.IndexFunc(search[s].Steps, func(st searchStep) bool { return st.Nodes == n })
		if i < 0 || !ok(search[s].Steps[i]) {
			return false
		}
	}
	return true
}

// rowsAt is every server's row at n (servers without a step at n have none).
func rowsAt(search map[string]*searchServer, n int) map[string]*serverReport {
	rows := map[string]*serverReport{}
	for s, ss := range search {
		for _, st := range ss.Steps {
			if st.Nodes == n {
				rows[s] = st.Report
			}
		}
	}
	return rows
}

// searchMarkdown is report.md's ladder table: per N and server whether it was carried.
func (r *report) searchMarkdown() string {
	names := r.searchNames()
	var b strings.Builder
	fmt.Fprintf(&b, "## The ladder\n\nEach step is one server at one N on a fresh stack; a server's ladder stops at its first step that misses an SLO or a storm goal, fails, or runs past %v.\n\n",
		time.Duration(r.StepBudgetS*float64(time.Second)))
	fmt.Fprintf(&b, "| N | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, n := range r.SearchLadder {
		cells := make([]string, len(names))
		for i, s := range names {
			cells[i] = "not run"
			for _, st := range r.Search[s].Steps {
				if st.Nodes == n {
					cells[i] = stepCell(st)
				}
			}
		}
		fmt.Fprintf(&b, "| %d | %s |\n", n, strings.Join(cells, " | "))
	}
	cells := make([]string, len(names))
	for i, s := range names {
		cells[i] = fmt.Sprint(r.Search[s].LargestN)
	}
	fmt.Fprintf(&b, "| **largest N carried** | %s |\n\n", strings.Join(cells, " | "))
	fmt.Fprintf(&b, "## At N=%d\n\nN=%d: %s.\n\n", r.Nodes, r.Nodes, r.NodesBecause)
	return b.String()
}

func (r *report) searchNames() []string { return inServerOrder(r.Search) }

func stepCell(st searchStep) string {
	if st.carried() {
		return fmt.Sprintf("carried (%.0f s)", st.DurationS)
	}
	var why []string
	if st.Error != "" {
		why = append(why, firstLine(st.Error))
	} else {
		if !st.SLOMet && st.Report != nil {
			why = append(why, "SLO: "+strings.Join(st.Report.SLOMissed, "; "))
		}
		if !st.StormMet && st.Report != nil {
			why = append(why, "storm: "+strings.Join(st.Report.Storm.Missed, "; "))
		}
	}
	return strings.ReplaceAll(fmt.Sprintf("not carried (%.0f s): %s", st.DurationS, strings.Join(why, "; ")), "|", "/")
}
