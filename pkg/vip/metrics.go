package vip

import (
	"github.com/hacp/hacp/internal/certmetrics"
	"github.com/prometheus/client_golang/prometheus"
)

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
	conflict      *prometheus.GaugeVec
	conflicts     *prometheus.CounterVec
	healthy       prometheus.Gauge
	announced     prometheus.Gauge
	leader        prometheus.Gauge
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
		conflict: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipd_vip_conflict",
			Help: "1 while another host than the VRRP master holds the VIP: it answers ARP/NDP for it, or advertises it in adverts this vipd drops (password, VRID, version). /status says who."}, []string{"instance", "vip"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipd_vip_conflicts_total",
			Help: "Conflict episodes of the VIP (vipd_vip_conflict going to 1)."}, []string{"instance", "vip"}),
		healthy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipd_health_check_up",
			Help: "1 while the health checks pass."}),
		announced: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipd_bgp_announced",
			Help: "BGP mode: 1 while the addresses' host routes are announced."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipd_bgp_leader",
			Help: "BGP mode with --bgp-announce leader: 1 while this host holds the Lease."}),
	}
	m.reg.MustRegister(m.state, m.priority, m.transitions, m.sent, m.received, m.dropped, m.mismatch, m.masterless, m.announceDelay, m.conflict, m.conflicts, m.healthy)
	return m
}

// bgpPeerCollector reports the BGP sessions at scrape time.
type bgpPeerCollector struct{ b *bgpRunner }

var (
	bgpPeerUp = prometheus.NewDesc("vipd_bgp_peer_established",
		"BGP mode: 1 while the session with the peer is established.", []string{"peer"}, nil)
	bgpPeerSent = prometheus.NewDesc("vipd_bgp_peer_prefixes_sent",
		"BGP mode: routes announced to the peer and not withdrawn.", []string{"peer"}, nil)
	bgpPeerFlaps = prometheus.NewDesc("vipd_bgp_peer_flaps_total",
		"BGP mode: times the established session with the peer went down.", []string{"peer"}, nil)
	bgpPeerUptime = prometheus.NewDesc("vipd_bgp_peer_uptime_seconds",
		"BGP mode: how long the session has been established (0 while it is not).", []string{"peer"}, nil)
	bgpPeerHold = prometheus.NewDesc("vipd_bgp_peer_hold_time_seconds",
		"BGP mode: the session's hold time (negotiated while established): how long the peer keeps this host's routes after a crash.", []string{"peer"}, nil)
)

func (c bgpPeerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- bgpPeerUp
	ch <- bgpPeerSent
	ch <- bgpPeerFlaps
	ch <- bgpPeerUptime
	ch <- bgpPeerHold
}

func (c bgpPeerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.b.status().Peers {
		up := 0.0
		if p.Established() {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(bgpPeerUp, prometheus.GaugeValue, up, p.Address)
		ch <- prometheus.MustNewConstMetric(bgpPeerSent, prometheus.GaugeValue, float64(p.PrefixesSent), p.Address)
		ch <- prometheus.MustNewConstMetric(bgpPeerFlaps, prometheus.CounterValue, float64(p.Flaps), p.Address)
		ch <- prometheus.MustNewConstMetric(bgpPeerUptime, prometheus.GaugeValue, p.Uptime, p.Address)
		ch <- prometheus.MustNewConstMetric(bgpPeerHold, prometheus.GaugeValue, float64(p.HoldTime), p.Address)
	}
}

// registerCertMetrics adds hacp_cert_expiry_seconds of certFiles to /metrics.
func (d *Daemon) registerCertMetrics() {
	d.metrics.reg.MustRegister(certmetrics.NewFunc(d.certFiles))
}

// certFiles are the certificates vipd uses, for hacp_cert_expiry_seconds: the CA of its https
// health check, and the serving certificate and client CA of --status-tls-addr (its plain
// status address has none, nor have GoBGP sessions). BGP leader mode's kubeconfig (usually
// admin.conf, with inline data) is not covered.
func (d *Daemon) certFiles() []certmetrics.File {
	d.mu.Lock()
	defer d.mu.Unlock()
	return []certmetrics.File{{Role: "check-ca", Path: d.cfg.CheckCAFile},
		{Role: "status-tls", Path: d.cfg.StatusTLS.CertFile}, {Role: "status-client-ca", Path: d.cfg.StatusTLS.ClientCAFile}}
}
