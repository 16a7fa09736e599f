package flowcontrol

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream's apiserver_flowcontrol_* metrics that hacp keeps.
type metrics struct {
	executing   *prometheus.GaugeVec
	seats       *prometheus.GaugeVec
	inQueue     *prometheus.GaugeVec
	rejected    *prometheus.CounterVec
	dispatched  *prometheus.CounterVec
	waitSeconds *prometheus.HistogramVec
	queueLen    *prometheus.HistogramVec
	nominal     *prometheus.GaugeVec
	lowerLimit  *prometheus.GaugeVec
	upperLimit  *prometheus.GaugeVec
}

func newMetrics() *metrics {
	plfs := []string{"priority_level", "flow_schema"}
	pl := []string{"priority_level"}
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "apiserver_flowcontrol_" + name, Help: help}, labels)
	}
	return &metrics{
		executing: gauge("current_executing_requests", "Requests in their execution stage, by priority level and flow schema.", plfs),
		seats:     gauge("current_executing_seats", "Seats occupied by the requests executing, by priority level and flow schema.", plfs),
		inQueue:   gauge("current_inqueue_requests", "Requests waiting in a queue, by priority level and flow schema.", plfs),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_flowcontrol_rejected_requests_total",
			Help: "Requests rejected by API priority and fairness, by priority level, flow schema and reason."}, append(plfs, "reason")),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_flowcontrol_dispatched_requests_total",
			Help: "Requests released for execution, by priority level and flow schema."}, plfs),
		waitSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_flowcontrol_request_wait_duration_seconds",
			Help:    "Time requests waited in their queue, by priority level, flow schema and whether they executed.",
			Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}}, append(plfs, "execute")),
		queueLen: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_flowcontrol_request_queue_length_after_enqueue",
			Help:    "Length of the queue a request that had to wait joined (itself included), by priority level and flow schema.",
			Buckets: []float64{0, 10, 25, 50, 100, 250, 500, 1000}}, plfs),
		nominal:    gauge("nominal_limit_seats", "Nominal number of execution seats of each priority level.", pl),
		lowerLimit: gauge("lower_limit_seats", "Seats a priority level keeps (nominal less lendable).", pl),
		upperLimit: gauge("upper_limit_seats", "Seats a priority level may use, borrowing (nominal plus borrowing limit).", pl),
	}
}

// Collectors lists the metrics for registration.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.executing, m.seats, m.inQueue, m.rejected, m.dispatched, m.waitSeconds, m.queueLen,
		m.nominal, m.lowerLimit, m.upperLimit}
}

func (m *metrics) setLimits(pl string, l limits) {
	m.nominal.WithLabelValues(pl).Set(float64(l.nominal))
	m.lowerLimit.WithLabelValues(pl).Set(float64(l.min))
	m.upperLimit.WithLabelValues(pl).Set(float64(l.max))
}

func (m *metrics) inqueue(pl, fs string, delta float64) { m.inQueue.WithLabelValues(pl, fs).Add(delta) }

func (m *metrics) queueLength(pl, fs string, n int) {
	m.queueLen.WithLabelValues(pl, fs).Observe(float64(n))
}

// waited records the end of a request's wait: it executes, or is rejected for reason.
func (m *metrics) waited(pl, fs string, since time.Time, execute bool, reason string) {
	exec := "false"
	if execute {
		exec = "true"
		m.dispatched.WithLabelValues(pl, fs).Inc()
	} else {
		m.rejected.WithLabelValues(pl, fs, reason).Inc()
	}
	m.waitSeconds.WithLabelValues(pl, fs, exec).Observe(time.Since(since).Seconds())
}
