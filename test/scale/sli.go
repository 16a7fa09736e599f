package main

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// API call classes of upstream's scalability SLIs.
const (
	classMutating      = "mutating"
	classGet           = "get"
	classListNamespace = "list_namespace"
	classListCluster   = "list_cluster"
)

var allClasses = []string{classMutating, classGet, classListNamespace, classListCluster}

// Upstream's scalability SLOs (p99 bounds, seconds).
var sloP99 = map[string]float64{
	classMutating:      1,
	classGet:           1,
	classListNamespace: 5,
	classListCluster:   30,
}

// podStartupSLO is the p99 bound of pod startup latency (excluding image pull).
const podStartupSLO = 5.0

// classify names the SLI class of one API request, or "" for requests the SLIs leave out
// (watches, non-resource paths such as /healthz and discovery).
func classify(method string, u *url.URL) string {
	switch method {
	case "POST", "PUT", "PATCH", "DELETE":
		return classMutating
	case "GET":
	default:
		return ""
	}
	if w := u.Query().Get("watch"); w == "true" || w == "1" {
		return ""
	}
	segs := resourceSegments(u.Path)
	if segs == nil {
		return ""
	}
	if len(segs) >= 2 && segs[0] == "namespaces" && len(segs) >= 3 {
		// namespaces/NS/resource[/name[/sub]]
		if len(segs) == 3 {
			return classListNamespace
		}
		return classGet
	}
	if len(segs) == 1 {
		return classListCluster
	}
	return classGet
}

// resourceSegments returns the path segments after /api/v1 or /apis/GROUP/VERSION, or nil
// for a path that names no resource.
func resourceSegments(path string) []string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		return segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		return segs[3:]
	}
	return nil
}

// sample is one API request the bench's clients made.
type sample struct {
	Class string
	Start time.Time
	Dur   time.Duration
	OK    bool
}

// recorder keeps every request's sample; it is shared by the bench's clients.
type recorder struct {
	mu      sync.Mutex
	samples []sample
}

func (r *recorder) add(s sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// between returns the samples that started in [from, to).
func (r *recorder) between(from, to time.Time) []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sample
	for _, s := range r.samples {
		if !s.Start.Before(from) && s.Start.Before(to) {
			out = append(out, s)
		}
	}
	return out
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of values; 0 for none.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	v := slices.Clone(values)
	slices.Sort(v)
	rank := int(math.Ceil(p / 100 * float64(len(v))))
	rank = min(max(rank, 1), len(v))
	return v[rank-1]
}

// classStats is one class's latencies (successful requests) and failures.
type classStats struct {
	Count  int     `json:"count"`
	Failed int     `json:"failed"`
	P50S   float64 `json:"p50_s"`
	P99S   float64 `json:"p99_s"`
}

// statsByClass summarises samples per class; every class has an entry.
func statsByClass(samples []sample) map[string]classStats {
	lat := map[string][]float64{}
	out := map[string]classStats{}
	for _, c := range allClasses {
		out[c] = classStats{}
	}
	for _, s := range samples {
		st := out[s.Class]
		if s.OK {
			st.Count++
			lat[s.Class] = append(lat[s.Class], s.Dur.Seconds())
		} else {
			st.Failed++
		}
		out[s.Class] = st
	}
	for c, st := range out {
		st.P50S = round3(percentile(lat[c], 50))
		st.P99S = round3(percentile(lat[c], 99))
		out[c] = st
	}
	return out
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// evaluateSLO returns the SLOs the measurements miss: a class without a successful request,
// or pods without a startup measurement, count as missed (nothing shows they are met).
func evaluateSLO(classes map[string]classStats, pods int, podP99 float64) []string {
	var missed []string
	for _, c := range allClasses {
		st := classes[c]
		switch {
		case st.Count == 0:
			missed = append(missed, fmt.Sprintf("%s: no successful request measured", c))
		case st.P99S > sloP99[c]:
			missed = append(missed, fmt.Sprintf("%s p99 %.3fs > %gs", c, st.P99S, sloP99[c]))
		}
	}
	switch {
	case pods == 0:
		missed = append(missed, "pod startup: no pod measured")
	case podP99 > podStartupSLO:
		missed = append(missed, fmt.Sprintf("pod startup p99 %.3fs > %gs", podP99, podStartupSLO))
	}
	return missed
}

// stormGoals are issue 39's bounds after the VIP master is killed.
const (
	stormWatchGoal  = 10.0 // seconds until every watch is re-established and caught up
	leaseStaleAfter = 40 * time.Second
)

// evaluateStorm returns the storm goals the measurements miss.
func evaluateStorm(s stormReport) []string {
	var missed []string
	if s.WatchesNotReestablished > 0 {
		missed = append(missed, fmt.Sprintf("%d nodes' watches not re-established", s.WatchesNotReestablished))
	} else if s.WatchesReestablishedS > stormWatchGoal {
		missed = append(missed, fmt.Sprintf("watches re-established after %.3fs > %gs", s.WatchesReestablishedS, stormWatchGoal))
	}
	if s.StaleLeases > 0 {
		missed = append(missed, fmt.Sprintf("%d node Leases stale past %v", s.StaleLeases, leaseStaleAfter))
	}
	if s.WritesLost > 0 {
		missed = append(missed, fmt.Sprintf("%d acknowledged writes lost", s.WritesLost))
	}
	return missed
}
