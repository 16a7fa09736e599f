package storage

import "github.com/prometheus/client_golang/prometheus"

// CacherMetrics are the watch caches' metrics, with upstream's names. A nil *CacherMetrics
// counts nothing.
type CacherMetrics struct {
	Terminated *prometheus.CounterVec // watchers closed because they fell behind
	Events     *prometheus.CounterVec // etcd events the caches received
	Objects    *prometheus.GaugeVec   // objects in each cache
}

// NewCacherMetrics returns unregistered metrics; register Collectors where the server
// registers its others.
func NewCacherMetrics() *CacherMetrics {
	return &CacherMetrics{
		Terminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_terminated_watchers_total",
			Help: "Watchers closed by the watch cache because their buffer overflowed (they fell behind).",
		}, []string{"resource"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_received_total",
			Help: "Events the watch cache of each resource received from etcd.",
		}, []string{"resource"}),
		Objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_objects",
			Help: "Objects held by the watch cache of each resource.",
		}, []string{"resource"}),
	}
}

// Collectors are the metrics to register.
func (m *CacherMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Terminated, m.Events, m.Objects}
}

func (m *CacherMetrics) terminated(resource string) {
	if m != nil {
		m.Terminated.WithLabelValues(resource).Inc()
	}
}

func (m *CacherMetrics) received(resource string, n int) {
	if m != nil {
		m.Events.WithLabelValues(resource).Add(float64(n))
	}
}

func (m *CacherMetrics) objects(resource string, n int) {
	if m != nil {
		m.Objects.WithLabelValues(resource).Set(float64(n))
	}
}
