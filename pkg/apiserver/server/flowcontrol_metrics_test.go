package server_test

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// scrapeFamilies reads s's /metrics as the admin.
func scrapeFamilies(t *testing.T, e *httpEnv) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := e.do(e.admin, "GET", "/metrics", "", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// series finds the series of fam with exactly the labels given (name=value pairs).
func series(fam *dto.MetricFamily, labels ...string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(labels))
		if slices.Equal(got, want) {
			return m
		}
	}
	return nil
}

// histogramCount is a histogram series' sample count (0 when there is none), checking that
// its buckets are want.
func histogramCount(t *testing.T, fams map[string]*dto.MetricFamily, name string, want []float64, labels ...string) uint64 {
	t.Helper()
	fam := fams[name]
	if fam != nil && fam.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("%s is a %v, want a histogram", name, fam.GetType())
	}
	m := series(fam, labels...)
	if m == nil {
		return 0
	}
	var bounds []float64
	for _, b := range m.GetHistogram().GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			bounds = append(bounds, b.GetUpperBound())
		}
	}
	if !slices.Equal(bounds, want) {
		t.Fatalf("%s%v buckets %v, want upstream's %v", name, labels, bounds, want)
	}
	return m.GetHistogram().GetSampleCount()
}

func gaugeValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := series(fams[name], labels...)
	if m == nil || fams[name].GetType() != dto.MetricType_GAUGE {
		t.Fatalf("no gauge %s%v", name, labels)
	}
	return m.GetGauge().GetValue()
}

// TestFlowControlMetrics: the APF metrics dashboards use that upstream 1.37 registers have
// its names, labels and buckets and count what was served: request_execution_seconds (by
// level, schema and type regular or watch, exempt requests too), work_estimated_seats
// (one sample of one seat per request of a limited level), current_limit_seats and the
// borrowing adjustment's gauges (the nominal seats shared out within each level's limits);
// request_concurrency_limit, gone in 1.37, is not there.
func TestFlowControlMetrics(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 10, 5 })
	e := newHTTPEnv(t, s)
	rc := servertest.RestConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(rc)
	const user = "metrics-user"
	fsUID, _ := tinyLevel(t, cs, user)
	as := map[string]string{"Impersonate-User": user}
	eventually(t, "metrics-user's requests classified to the tiny level", func() bool {
		r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
		return r.StatusCode == 200 && r.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == fsUID
	})
	if _, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exec := "apiserver_flowcontrol_request_execution_seconds"
	seats := "apiserver_flowcontrol_work_estimated_seats"
	durations := []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}
	seatBuckets := []float64{1, 2, 4, 8, 16, 32, 64, 100}
	tiny := []string{"priority_level=tiny", "flow_schema=tiny"}
	before := scrapeFamilies(t, e)
	execBefore := histogramCount(t, before, exec, durations, append(tiny, "type=regular")...)
	seatsBefore := histogramCount(t, before, seats, seatBuckets, tiny...)
	const n = 5
	for range n {
		if r, b := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps/m", "", nil, as); r.StatusCode != 200 {
			t.Fatalf("get as %s: %d %s", user, r.StatusCode, b)
		}
	}
	// A watch of the tiny level, and the admin's (exempt) requests.
	watchCfg := *rc
	watchCfg.Impersonate.UserName = user
	w := openStream(t, &watchCfg, "/api/v1/namespaces/default/configmaps?watch=true")
	if w.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s", w.Status)
	}
	w.Body.Close()
	after := scrapeFamilies(t, e)
	if got := histogramCount(t, after, exec, durations, append(tiny, "type=regular")...) - execBefore; got != n {
		t.Errorf("%s{tiny,regular} counted %d of the %d requests", exec, got, n)
	}
	if got := histogramCount(t, after, exec, durations, append(tiny, "type=watch")...); got != 1 {
		t.Errorf("%s{tiny,watch} counted %d watches, want 1", exec, got)
	}
	if got := histogramCount(t, after, exec, durations, "priority_level=exempt", "flow_schema=exempt", "type=regular"); got == 0 {
		t.Errorf("%s counts no exempt request", exec)
	}
	if got := histogramCount(t, after, seats, seatBuckets, tiny...) - seatsBefore; got != n+1 {
		t.Errorf("%s{tiny} counted %d, want %d (the gets and the watch)", seats, got, n+1)
	}
	if m := series(after[seats], tiny...); m != nil && m.GetHistogram().GetBucket()[0].GetCumulativeCount() != m.GetHistogram().GetSampleCount() {
		t.Errorf("%s{tiny}: not every request was estimated at one seat: %v", seats, m.GetHistogram())
	}
	if series(after[seats], "priority_level=exempt", "flow_schema=exempt") != nil {
		t.Errorf("%s has exempt requests; upstream estimates no work for them", seats)
	}
	// The borrowing adjustment shares the server's nominal seats among the limited levels
	// (upstream's rounding gives or takes half a seat a level), each within its lower and
	// upper limits, and reports each level's demand and target and the fair fraction.
	levels := []string{"tiny", "global-default", "workload-low", "workload-high", "node-high", "system", "leader-election", "catch-all"}
	curSum, nominalSum := 0.0, 0.0
	for _, pl := range levels {
		cur := gaugeValue(t, after, "apiserver_flowcontrol_current_limit_seats", "priority_level="+pl)
		lower := gaugeValue(t, after, "apiserver_flowcontrol_lower_limit_seats", "priority_level="+pl)
		upper := gaugeValue(t, after, "apiserver_flowcontrol_upper_limit_seats", "priority_level="+pl)
		if cur < lower || cur > upper {
			t.Errorf("current_limit_seats{%s} %v, want within its limits [%v, %v]", pl, cur, lower, upper)
		}
		curSum += cur
		nominalSum += gaugeValue(t, after, "apiserver_flowcontrol_nominal_limit_seats", "priority_level="+pl)
		for _, g := range []string{"demand_seats_high_watermark", "demand_seats_average", "demand_seats_stdev", "demand_seats_smoothed", "target_seats"} {
			gaugeValue(t, after, "apiserver_flowcontrol_"+g, "priority_level="+pl)
		}
	}
	if slack := float64(len(levels)) / 2; math.Abs(curSum-nominalSum) > slack {
		t.Errorf("current_limit_seats of the limited levels sum to %v, want their nominal seats' %v (give or take %v)", curSum, nominalSum, slack)
	}
	if f := gaugeValue(t, after, "apiserver_flowcontrol_seat_fair_frac"); f < 0 {
		t.Errorf("seat_fair_frac %v, want a fraction", f)
	}
	for name := range after {
		if strings.HasPrefix(name, "apiserver_flowcontrol_request_concurrency_limit") {
			t.Errorf("%s is registered; kube-apiserver 1.37 has no such metric", name)
		}
	}
}
