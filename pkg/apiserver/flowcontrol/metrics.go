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
	current     *prometheus.GaugeVec
	execSeconds *prometheus.HistogramVec
	workSeats   *prometheus.HistogramVec
	// The borrowing adjustment's: each level's seat demand over the last period, its
	// target, and the fair fraction of the server's seats.
	demandHigh, demandAvg, demandDev, demandSmoothed, target *prometheus.GaugeVec
	fairFrac                                                 prometheus.Gauge
}

// durationBuckets are upstream's buckets of the APF wait and execution times.
var durationBuckets = []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}

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
			Buckets: durationBuckets}, append(plfs, "execute")),
		queueLen: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_flowcontrol_request_queue_length_after_enqueue",
			Help:    "Length of the queue a request joined, itself included, before any was dispatched, by priority level and flow schema.",
			Buckets: []float64{0, 10, 25, 50, 100, 250, 500, 1000}}, plfs),
		nominal:    gauge("nominal_limit_seats", "Nominal number of execution seats of each priority level.", pl),
		lowerLimit: gauge("lower_limit_seats", "Seats a priority level keeps (nominal less lendable).", pl),
		upperLimit: gauge("upper_limit_seats", "Seats a priority level may use, borrowing (nominal plus borrowing limit).", pl),
		current:    gauge("current_limit_seats", "Seats a priority level may use now, set from demand every borrowing period.", pl),
		execSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_flowcontrol_request_execution_seconds",
			Help:    "Time requests held their seats (a watch: until it starts), by priority level, flow schema and type (regular or watch).",
			Buckets: durationBuckets}, append(plfs, "type")),
		workSeats: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apiserver_flowcontrol_work_estimated_seats",
			Help:    "Seats estimated for the requests of the non-exempt priority levels, by priority level and flow schema.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 100}}, plfs),
		demandHigh:     gauge("demand_seats_high_watermark", "High watermark, over last adjustment period, of the seats demanded (executing and waiting).", pl),
		demandAvg:      gauge("demand_seats_average", "Time-weighted average, over last adjustment period, of the seats demanded.", pl),
		demandDev:      gauge("demand_seats_stdev", "Time-weighted standard deviation, over last adjustment period, of the seats demanded.", pl),
		demandSmoothed: gauge("demand_seats_smoothed", "Smoothed seat demands.", pl),
		target:         gauge("target_seats", "Seat allocation targets.", pl),
		fairFrac: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apiserver_flowcontrol_seat_fair_frac",
			Help: "Fair fraction of server's concurrency to allocate to each priority level that can use it."}),
	}
}

// Collectors lists the metrics for registration.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.executing, m.seats, m.inQueue, m.rejected, m.dispatched, m.waitSeconds, m.queueLen,
		m.nominal, m.lowerLimit, m.upperLimit, m.current, m.execSeconds, m.workSeats,
		m.demandHigh, m.demandAvg, m.demandDev, m.demandSmoothed, m.target, m.fairFrac}
}

func (m *metrics) setLimits(pl string, l limits) {
	m.nominal.WithLabelValues(pl).Set(float64(l.nominal))
	m.lowerLimit.WithLabelValues(pl).Set(float64(l.min))
	m.upperLimit.WithLabelValues(pl).Set(float64(l.max))
}

// adjusted records a level's borrowing adjustment: its demand statistics, target and
// current limit.
func (m *metrics) adjusted(pl string, s demandStats, target float64, current int) {
	m.demandHigh.WithLabelValues(pl).Set(float64(s.highWatermark))
	m.demandAvg.WithLabelValues(pl).Set(s.avg)
	m.demandDev.WithLabelValues(pl).Set(s.dev)
	m.demandSmoothed.WithLabelValues(pl).Set(s.smoothed)
	m.target.WithLabelValues(pl).Set(target)
	m.current.WithLabelValues(pl).Set(float64(current))
}

// executed records how long a request held its seats.
func (m *metrics) executed(pl, fs string, watch bool, since time.Time) {
	kind := "regular"
	if watch {
		kind = "watch"
	}
	m.execSeconds.WithLabelValues(pl, fs, kind).Observe(time.Since(since).Seconds())
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
