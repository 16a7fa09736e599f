package vip

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	reg           *prometheus.Registry
	state         *prometheus.GaugeVec
	priority      *prometheus.GaugeVec
	transitions   *prometheus.CounterVec
	sent          *prometheus.CounterVec
	received      *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	mismatch      *prometheus.CounterVec
	masterless    *prometheus.CounterVec
	announceDelay *prometheus.GaugeVec
	healthy       prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipd_state",
			Help: "State of the instance: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT."}, []string{"instance"}),
		priority: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipd_priority",
			Help: "Effective priority (configured priority plus health weight)."}, []string{"instance"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_transitions_total",
			Help: "State transitions, by new state."}, []string{"instance", "state"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_adverts_sent_total",
			Help: "VRRP adverts sent."}, []string{"instance"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_adverts_received_total",
			Help: "Valid VRRP adverts received from other routers."}, []string{"instance"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_adverts_dropped_total",
			Help: "Received packets dropped, by reason (malformed, checksum, ttl, version, vrid, auth, interval, own, peer)."}, []string{"instance", "reason"}),
		mismatch: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_advert_interval_mismatch_total",
			Help: "Adverts whose interval differs from ours."}, []string{"instance"}),
		masterless: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_masterless_seconds_total",
			Help: "Time without a master as seen by this instance: gaps between signs of a master beyond one advert interval."}, []string{"instance"}),
		announceDelay: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipd_announce_delay_seconds",
			Help: "At the last takeover, time from binding the addresses to the first gratuitous ARP."}, []string{"instance"}),
		healthy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipd_health_check_up",
			Help: "1 while the health checks pass."}),
	}
	m.reg.MustRegister(m.state, m.priority, m.transitions, m.sent, m.received, m.dropped, m.mismatch, m.masterless, m.announceDelay, m.healthy)
	return m
}
