package server

import (
	"errors"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics counts and times requests, with upstream's metric names.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
	cache    *storage.CacherMetrics
	// embeddedEtcd says /metrics also serves the embedded etcd member's etcd_* metrics.
	embeddedEtcd atomic.Bool
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total", Help: "Requests by verb, group, resource and HTTP code.",
		}, []string{"verb", "group", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds", Help: "Request latency by verb, group and resource (watches excluded).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "resource"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests", Help: "Requests being served, read-only or mutating.",
		}, []string{"request_kind"}),
	}
	m.cache = storage.NewCacherMetrics()
	m.registry.MustRegister(m.requests, m.duration, m.inflight, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(m.cache.Collectors()...)
	return m
}

// registerOnce registers collectors, tolerating ones already registered (a restarted Run).
func registerOnce(reg *prometheus.Registry, cs ...prometheus.Collector) error {
	for _, c := range cs {
		var already prometheus.AlreadyRegisteredError
		if err := reg.Register(c); err != nil && !errors.As(err, &already) {
			return err
		}
	}
	return nil
}

// Handler serves /metrics.
func (m *metrics) Handler() http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{m.registry, etcdGatherer{m}}, promhttp.HandlerOpts{})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// metricsVerb is the verb label of apiserver_request_total, as upstream's: LIST and WATCH for
// collection reads, otherwise the HTTP method.
func metricsVerb(info *request.Info, r *http.Request) string {
	if info != nil && info.IsResourceRequest {
		switch info.Verb {
		case "list":
			return "LIST"
		case "watch":
			return "WATCH"
		}
	}
	return strings.ToUpper(r.Method)
}

func (m *metrics) instrument(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		verb, group, resource := metricsVerb(info, r), "", ""
		if info != nil && info.IsResourceRequest {
			group, resource = info.APIGroup, info.Resource
		}
		kind := "readOnly"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			kind = "mutating"
		}
		m.inflight.WithLabelValues(kind).Inc()
		defer m.inflight.WithLabelValues(kind).Dec()
		rec := &statusRecorder{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(rec, r)
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		m.requests.WithLabelValues(verb, group, resource, strconv.Itoa(rec.code)).Inc()
		if verb != "WATCH" {
			m.duration.WithLabelValues(verb, group, resource).Observe(time.Since(start).Seconds())
		}
	})
}
