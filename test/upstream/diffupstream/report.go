package diffupstream

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Results of a check.
const (
	Same    = "same"
	Differs = "differs"
)

// Check is one comparison: its id (area/...), whether the answers agree, and both answers
// as compared (with the Status messages beside them, not compared).
type Check struct {
	ID     string   `json:"id"`
	Area   string   `json:"area"`
	Result string   `json:"result"`
	Diffs  []string `json:"diffs,omitempty"`
	// Allowed is the allow-list's reason when the difference is an allowed one.
	Allowed     string   `json:"allowed,omitempty"`
	Kube        any      `json:"kube"`
	Hacp        any      `json:"hacp"`
	KubeMessage string   `json:"kubeMessage,omitempty"`
	HacpMessage string   `json:"hacpMessage,omitempty"`
	paths       []string // of every difference, for the allow-list
}

// Report is every check of one run.
type Report struct {
	Version string  `json:"version"`
	Took    string  `json:"took"`
	Checks  []Check `json:"checks"`
	// UnusedAllow are allow-list entries for this version that matched no difference.
	UnusedAllow []string `json:"unusedAllow,omitempty"`
}

// apply marks the differences the allow-list explains and notes its unused entries.
func (r *Report) apply(a *AllowList) {
	used := map[int]bool{}
	for i := range r.Checks {
		c := &r.Checks[i]
		if c.Result != Differs {
			continue
		}
		reasons, idx := a.explain(c.ID, r.Version, c.paths)
		if reasons == nil {
			continue
		}
		c.Allowed = strings.Join(reasons, "; ")
		for _, n := range idx {
			used[n] = true
		}
	}
	for i, e := range a.Entries {
		if !used[i] && e.appliesTo(r.Version) {
			r.UnusedAllow = append(r.UnusedAllow, e.name())
		}
	}
}

// Failed are the differences no allow-list entry explains.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Result == Differs && c.Allowed == "" {
			out = append(out, c)
		}
	}
	return out
}

// areaCount is one line of the summary.
type areaCount struct{ same, allowed, differs int }

// Counts are the checks per area: same, allowed differences, other differences.
func (r *Report) counts() (map[string]*areaCount, []string) {
	m := map[string]*areaCount{}
	for _, c := range r.Checks {
		ac := m[c.Area]
		if ac == nil {
			ac = &areaCount{}
			m[c.Area] = ac
		}
		switch {
		case c.Result == Same:
			ac.same++
		case c.Allowed != "":
			ac.allowed++
		default:
			ac.differs++
		}
	}
	var areas []string
	for a := range m {
		areas = append(areas, a)
	}
	sort.Strings(areas)
	return m, areas
}

// CountsTable is a markdown table of the checks per area.
func (r *Report) CountsTable() string {
	var b strings.Builder
	m, areas := r.counts()
	b.WriteString("| area | checks | same | allowed | differ |\n|---|---:|---:|---:|---:|\n")
	var tot areaCount
	for _, a := range areas {
		c := m[a]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", a, c.same+c.allowed+c.differs, c.same, c.allowed, c.differs)
		tot.same, tot.allowed, tot.differs = tot.same+c.same, tot.allowed+c.allowed, tot.differs+c.differs
	}
	fmt.Fprintf(&b, "| **total** | %d | %d | %d | %d |\n", tot.same+tot.allowed+tot.differs, tot.same, tot.allowed, tot.differs)
	return b.String()
}

// Summary is the markdown summary: counts per area, then each difference.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# diff-upstream: hacp against kube-apiserver %s\n\n", r.Version)
	b.WriteString(r.CountsTable() + "\n")
	if len(r.UnusedAllow) > 0 {
		fmt.Fprintf(&b, "Allow-list entries that matched nothing (remove them): %s\n\n", strings.Join(r.UnusedAllow, ", "))
	}
	failed := r.Failed()
	fmt.Fprintf(&b, "## Differences not in the allow-list (%d)\n\n", len(failed))
	for _, c := range failed {
		writeCheck(&b, c)
	}
	b.WriteString("\n## Allowed differences\n\n")
	for _, c := range r.Checks {
		if c.Result == Differs && c.Allowed != "" {
			fmt.Fprintf(&b, "- `%s` (%s)\n", c.ID, c.Allowed)
		}
	}
	return b.String()
}

func writeCheck(b *strings.Builder, c Check) {
	fmt.Fprintf(b, "- `%s`\n", c.ID)
	for _, d := range c.Diffs {
		if len(d) > 400 {
			d = d[:400] + "..."
		}
		fmt.Fprintf(b, "  - %s\n", d)
	}
	if c.KubeMessage != c.HacpMessage {
		fmt.Fprintf(b, "  - messages: kube-apiserver %q, hacp %q\n", c.KubeMessage, c.HacpMessage)
	}
}

// write puts report.json and summary.md into dir.
func (r *Report) write(dir string) error {
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
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(r.Summary()), 0o644)
}
