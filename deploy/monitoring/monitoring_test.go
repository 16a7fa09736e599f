// Package monitoring holds the tests of the Prometheus rules and Grafana dashboards in this
// directory: promtool checks and unit-tests the rules, and every PromQL expression (rules
// and dashboards) must name only metrics hacp's programs export.
package monitoring

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
	"k8s.io/client-go/rest"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

// TestRules runs promtool check rules and promtool test rules on tests/*.yaml.
func TestRules(t *testing.T) {
	promtool := upstream.Binary(t, upstream.Promtool)
	run(t, promtool, "check", "rules", "alerts.yaml")
	tests, err := filepath.Glob("tests/*.yaml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no rule tests under tests/: %v", err)
	}
	run(t, promtool, append([]string{"test", "rules"}, tests...)...)
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// TestExpressionsNameExportedMetrics parses every expression of the rules and dashboards
// with Prometheus's parser and checks the metric names against what the programs export.
func TestExpressionsNameExportedMetrics(t *testing.T) {
	names := upstream.Binary(t, upstream.PromQLNames)
	exprs := map[string]string{} // expression -> where
	rules, records := ruleExpressions(t)
	for e, where := range rules {
		exprs[e] = where
	}
	dashboards, err := filepath.Glob("dashboards/*.json")
	if err != nil || len(dashboards) != 3 {
		t.Fatalf("dashboards: %v, %v; want vipd, lbproxy and apiserver", dashboards, err)
	}
	for _, d := range dashboards {
		for e, where := range dashboardExpressions(t, d) {
			exprs[e] = where
		}
	}
	var list []string
	for e := range exprs {
		list = append(list, e)
	}
	sort.Strings(list)
	in, _ := json.Marshal(list)
	cmd := exec.Command(names)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("promql-names: %v", err)
	}
	var results []struct {
		Names []string
		Error string
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(list) {
		t.Fatalf("promql-names answered %d results for %d expressions: %v", len(results), len(list), err)
	}
	known := exportedMetrics(t)
	for _, r := range records {
		known[r] = true
	}
	known["up"] = true // Prometheus's own, per target
	used := map[string]bool{}
	for i, r := range results {
		if r.Error != "" {
			t.Errorf("%s: %q does not parse: %s", exprs[list[i]], list[i], r.Error)
		}
		if len(r.Names) == 0 && r.Error == "" {
			t.Errorf("%s: %q names no metric", exprs[list[i]], list[i])
		}
		for _, n := range r.Names {
			used[n] = true
			if !known[n] {
				t.Errorf("%s: %q names %s, which no hacp program exports", exprs[list[i]], list[i], n)
			}
		}
	}
	// Each program's own metrics appear on its dashboard or in a rule.
	for _, prefix := range []string{"vipd_", "lbproxy_"} {
		for n := range known {
			if strings.HasPrefix(n, prefix) && !used[n] {
				t.Errorf("%s is exported but on no dashboard and in no rule", n)
			}
		}
	}
}

// ruleExpressions returns the rules' expressions and the recording rules' names.
func ruleExpressions(t *testing.T) (map[string]string, []string) {
	t.Helper()
	data, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Record, Expr string
				Annotations         map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/monitoring.md")
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	var records []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs[r.Expr] = "alerts.yaml " + g.Name + " " + r.Alert + r.Record
			if r.Record != "" {
				records = append(records, r.Record)
				continue
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s has no %s annotation", r.Alert, a)
				}
			}
			if !bytes.Contains(doc, []byte("\n### "+r.Alert+"\n")) {
				t.Errorf("docs/monitoring.md has no section ### %s", r.Alert)
			}
			if anchor, _, _ := strings.Cut(strings.TrimPrefix(r.Annotations["runbook"], "docs/monitoring.md#"), ":"); !bytes.Contains(bytes.ToLower(doc), []byte("\n### "+anchor+"\n")) {
				t.Errorf("alert %s: runbook %q points to no section of docs/monitoring.md", r.Alert, anchor)
			}
		}
	}
	return exprs, records
}

// grafanaVariable matches the dashboards' variables: Grafana's $__rate_interval and the
// like, and the template variables ($instance, ${datasource}).
var grafanaVariable = regexp.MustCompile(`\$\{?(__\w+|\w+)\}?`)

// dashboardExpressions returns a dashboard's panel and variable queries, with Grafana's
// variables replaced by values that parse (an interval, a label value).
func dashboardExpressions(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID, Title string
		Panels     []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s is no valid JSON: %v", path, err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: a dashboard needs a uid, a title and panels", path)
	}
	subst := func(e string) string {
		return grafanaVariable.ReplaceAllStringFunc(e, func(v string) string {
			if strings.Contains(v, "__") {
				return "5m"
			}
			return "x"
		})
	}
	exprs := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", path, p.Title)
		}
		for _, tg := range p.Targets {
			exprs[subst(tg.Expr)] = path + " panel " + p.Title
		}
	}
	return exprs
}

// exportedMetrics are the metric names hacp's programs export: the apiserver's (etcd's
// included) as a running one serves them, vipd's and lbproxy's from their metric definitions
// (a running vipd needs a network namespace and root).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	s := servertest.New(t, func(c *server.Config) { c.MetricsBindAddress = "127.0.0.1:0" })
	rc := servertest.RestConfig(t, s)
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(rc.Host + "/api/v1/namespaces/default/configmaps") // one LIST, so the request metrics have a series
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err = http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for name, mf := range families {
		known[name] = true
		switch mf.GetType().String() {
		case "HISTOGRAM":
			known[name+"_bucket"], known[name+"_sum"], known[name+"_count"] = true, true, true
		case "SUMMARY":
			known[name+"_sum"], known[name+"_count"] = true, true
		}
	}
	for _, want := range []string{"apiserver_request_total", "etcd_server_has_leader", "hacp_cert_expiry_seconds"} {
		if !known[want] {
			t.Fatalf("the apiserver's /metrics lacks %s", want)
		}
	}
	// A lone member has no peers, so it exports no per-peer series; a stacked one does.
	known["etcd_network_peer_round_trip_time_seconds_bucket"] = true

	definition := regexp.MustCompile(`(?:Name: *|NewDesc\()"((?:vipd|lbproxy|hacp)_\w+)"`)
	for _, f := range []string{"../../pkg/vip/metrics.go", "../../pkg/lb/status.go", "../../internal/certmetrics/certmetrics.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := definition.FindAllSubmatch(src, -1)
		if len(found) == 0 {
			t.Fatalf("%s defines no metric", f)
		}
		for _, m := range found {
			known[string(m[1])] = true
		}
	}
	return known
}
