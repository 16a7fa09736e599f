package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// PrometheusVersion is the github.com/prometheus/prometheus module promtool comes from (the
// Go module of Prometheus 3.x: v0.3xx.y).
const PrometheusVersion = "v0.316.0"

// Promtool checks and unit-tests the alert rules of deploy/monitoring.
const Promtool = "promtool"

// PromQLNames prints the metric names of PromQL expressions, parsed by Prometheus's own
// parser, so the dashboards' queries are checked against the metrics hacp exports.
const PromQLNames = "promql-names"

// buildPromtool writes a scratch module that requires the Prometheus module and holds
// promql-names, then builds promtool and promql-names into dir/bin.
func buildPromtool(ctx context.Context, dir string) error {
	gomod := fmt.Sprintf("module hacp.local/promtool\n\ngo 1.26.7\n\nrequire github.com/prometheus/prometheus %s\n", PrometheusVersion)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, PromQLNames), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, PromQLNames, "main.go"), []byte(promqlNamesMain), 0o644); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "bin.tmp")
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	// remove_all_sd leaves out the cloud service discoveries (and their SDKs, most of the
	// build): rules and their tests need none.
	if err := goCmd(ctx, dir, nil, "build", "-mod=mod", "-trimpath", "-tags", "remove_all_sd", "-o", tmp+"/",
		"github.com/prometheus/prometheus/cmd/promtool", "./"+PromQLNames); err != nil {
		return err
	}
	return moveBins(dir, tmp, []string{Promtool, PromQLNames})
}

// promqlNamesMain reads a JSON array of PromQL expressions on stdin and writes, for each, the
// metric names its selectors name (or the parse error), as a JSON array in the same order.
const promqlNamesMain = `// Command promql-names prints the metric names of PromQL expressions (hacp's dashboard check).
package main

import (
	"encoding/json"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Names []string ` + "`json:\"names\"`" + `
	Error string   ` + "`json:\"error,omitempty\"`" + `
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		os.Stderr.WriteString("promql-names: " + err.Error() + "\n")
		os.Exit(2)
	}
	out := make([]result, len(exprs))
	for i, e := range exprs {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(e)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		seen := map[string]bool{}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name != "" && !seen[name] {
				seen[name] = true
				out[i].Names = append(out[i].Names, name)
			}
			return nil
		})
		sort.Strings(out[i].Names)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
`
