package lb

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hacp/hacp/internal/certmetrics"
	"github.com/hacp/hacp/pkg/health"
)

// BackendStatus is one backend in /status.
type BackendStatus struct {
	Addr           string        `json:"addr"`
	Weight         int           `json:"weight"`
	State          string        `json:"state"` // UP, DOWN, or REMOVED (dropped by a reload, sessions still open)
	Check          health.Status `json:"check"`
	ActiveConns    int           `json:"activeConns"`
	TotalConns     uint64        `json:"totalConns"`
	ConnectFailure uint64        `json:"connectFailures"`
	BusyTimeouts   uint64        `json:"busyConnectTimeouts"` // of ConnectFailure: timeouts while it was sending, not marked DOWN
	BytesIn        uint64        `json:"bytesIn"`             // client to backend
	BytesOut       uint64        `json:"bytesOut"`            // backend to client
}

// Status is the whole of /status.
type Status struct {
	Listen      string          `json:"listen"`
	Balance     string          `json:"balance"`
	ActiveConns int64           `json:"activeConns"`
	Accepted    uint64          `json:"accepted"`
	Refused     uint64          `json:"refused"`
	Retries     uint64          `json:"retries"`
	OutOfFiles  uint64          `json:"outOfFiles"` // accepts and connects failed for want of a file descriptor
	Queued      int             `json:"queued"`
	Backends    []BackendStatus `json:"backends"`
	Sync        *SyncStatus     `json:"sync,omitempty"` // the connection-table sync, when on
}

// Status returns a snapshot of the proxy and its backends. Byte counts include running
// sessions' bytes as they move.
func (p *Proxy) Status() Status {
	st := Status{
		Balance:     p.cfg.Balance,
		ActiveConns: p.nActive.Load(),
		Accepted:    p.accepted.Load(),
		Refused:     p.refused.Load(),
		Retries:     p.retried.Load(),
		OutOfFiles:  p.noFiles.Load(),
	}
	if p.ln != nil {
		st.Listen = p.ln.Addr().String()
	}
	if p.sync != nil {
		st.Sync = p.sync.status()
	}
	p.pool.mu.Lock()
	st.Queued = p.pool.queue.Len()
	type row struct {
		b  *backend
		bs BackendStatus
	}
	rows := make([]row, 0, len(p.pool.backends))
	for _, b := range p.pool.backends {
		state := "DOWN"
		switch {
		case b.removed:
			state = "REMOVED"
		case b.up:
			state = "UP"
		}
		rows = append(rows, row{b, BackendStatus{Addr: b.addr, Weight: b.weight, State: state, ActiveConns: b.active}})
	}
	p.pool.mu.Unlock()
	for _, r := range rows {
		r.bs.Check = r.b.checker.Status()
		r.bs.TotalConns = r.b.connTotal.Load()
		r.bs.ConnectFailure = r.b.connFailures.Load()
		r.bs.BusyTimeouts = r.b.busyTimeouts.Load()
		r.bs.BytesIn = r.b.bytesIn.Load()
		r.bs.BytesOut = r.b.bytesOut.Load()
		st.Backends = append(st.Backends, r.bs)
	}
	return st
}

// StatusHandler serves /status (JSON) and /metrics (Prometheus).
func (p *Proxy) StatusHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{p: p}, p.certs, certmetrics.New(certmetrics.File{Role: "check-ca", Path: p.cfg.CheckCA},
		certmetrics.File{Role: "check-client", Path: p.cfg.CheckCert},
		certmetrics.File{Role: "status-tls", Path: p.cfg.StatusTLS.CertFile}, certmetrics.File{Role: "status-client-ca", Path: p.cfg.StatusTLS.ClientCAFile}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p.Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

var (
	descUp          = prometheus.NewDesc("lbproxy_backend_up", "1 when the backend is UP.", []string{"backend"}, nil)
	descActive      = prometheus.NewDesc("lbproxy_backend_active_connections", "Open sessions through the backend.", []string{"backend"}, nil)
	descConns       = prometheus.NewDesc("lbproxy_backend_connections_total", "Sessions established through the backend.", []string{"backend"}, nil)
	descConnFail    = prometheus.NewDesc("lbproxy_backend_connect_failures_total", "Connects to the backend that failed or timed out.", []string{"backend"}, nil)
	descBusyTimeout = prometheus.NewDesc("lbproxy_backend_busy_connect_timeouts_total", "Connect timeouts while the backend was sending on other sessions (slow to accept, not marked DOWN).", []string{"backend"}, nil)
	descBytes       = prometheus.NewDesc("lbproxy_backend_bytes_total", "Bytes moved; direction in is client to backend.", []string{"backend", "direction"}, nil)
	descChecks      = prometheus.NewDesc("lbproxy_backend_checks_total", "Active health checks run.", []string{"backend"}, nil)
	descCheckFail   = prometheus.NewDesc("lbproxy_backend_check_failures_total", "Failed health checks and passive failures.", []string{"backend"}, nil)
	descStateChange = prometheus.NewDesc("lbproxy_backend_state_since_seconds", "Unix time of the backend's last state change.", []string{"backend"}, nil)
	descActiveAll   = prometheus.NewDesc("lbproxy_active_connections", "Open client sessions.", nil, nil)
	descAccepted    = prometheus.NewDesc("lbproxy_accepted_connections_total", "Client connections accepted.", nil, nil)
	descRefused     = prometheus.NewDesc("lbproxy_refused_connections_total", "Client connections closed because no backend could take them.", nil, nil)
	descRetries     = prometheus.NewDesc("lbproxy_retries_total", "Connects retried on another backend.", nil, nil)
	descQueued      = prometheus.NewDesc("lbproxy_queued_connections", "Client connections waiting for a backend slot.", nil, nil)
	descOutOfFiles  = prometheus.NewDesc("lbproxy_out_of_files_total", "Accepts and backend connects that failed because the process or system had no file descriptor left.", nil, nil)

	descSyncSent      = prometheus.NewDesc("lbproxy_sync_datagrams_sent_total", "Connection-table datagrams sent to peers (tables and heartbeats).", nil, nil)
	descSyncReceived  = prometheus.NewDesc("lbproxy_sync_datagrams_received_total", "Connection-table datagrams accepted from peers.", nil, nil)
	descSyncDropped   = prometheus.NewDesc("lbproxy_sync_datagrams_dropped_total", "Connection-table datagrams dropped: malformed, from an address that is no peer (unknown_peer), or entries beyond a peer's bound (table_full).", []string{"reason"}, nil)
	descSyncPeerConns = prometheus.NewDesc("lbproxy_sync_peer_connections", "Client connections a peer reported carrying.", []string{"peer"}, nil)
	descSyncPeerAge   = prometheus.NewDesc("lbproxy_sync_peer_last_heard_seconds", "Unix time of the last datagram from a peer (0: never).", []string{"peer"}, nil)
	descSyncTakeovers = prometheus.NewDesc("lbproxy_sync_takeovers_total", "Addresses that appeared on this host with connections of a peer on them.", nil, nil)
	descSyncProbes    = prometheus.NewDesc("lbproxy_sync_probes_sent_total", "Probes sent to clients of a dead peer's connections after a takeover (each elicits a reset); two per connection.", nil, nil)
	descSyncProbeErr  = prometheus.NewDesc("lbproxy_sync_probe_errors_total", "Probes that could not be sent.", nil, nil)
)

// collector reads the proxy's counters at scrape time.
type collector struct{ p *Proxy }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descActive, descConns, descConnFail, descBusyTimeout, descBytes, descChecks, descCheckFail, descStateChange, descActiveAll, descAccepted, descRefused, descRetries, descQueued, descOutOfFiles,
		descSyncSent, descSyncReceived, descSyncDropped, descSyncPeerConns, descSyncPeerAge, descSyncTakeovers, descSyncProbes, descSyncProbeErr} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.Status()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for _, b := range st.Backends {
		if b.State == "REMOVED" {
			continue // may share its address with a re-added backend
		}
		up := 0.0
		if b.State == "UP" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, gauge, up, b.Addr)
		ch <- prometheus.MustNewConstMetric(descActive, gauge, float64(b.ActiveConns), b.Addr)
		ch <- prometheus.MustNewConstMetric(descConns, counter, float64(b.TotalConns), b.Addr)
		ch <- prometheus.MustNewConstMetric(descConnFail, counter, float64(b.ConnectFailure), b.Addr)
		ch <- prometheus.MustNewConstMetric(descBusyTimeout, counter, float64(b.BusyTimeouts), b.Addr)
		ch <- prometheus.MustNewConstMetric(descBytes, counter, float64(b.BytesIn), b.Addr, "in")
		ch <- prometheus.MustNewConstMetric(descBytes, counter, float64(b.BytesOut), b.Addr, "out")
		ch <- prometheus.MustNewConstMetric(descChecks, counter, float64(b.Check.Checks), b.Addr)
		ch <- prometheus.MustNewConstMetric(descCheckFail, counter, float64(b.Check.Failures), b.Addr)
		ch <- prometheus.MustNewConstMetric(descStateChange, gauge, float64(b.Check.Since.UnixNano())/float64(time.Second), b.Addr)
	}
	ch <- prometheus.MustNewConstMetric(descActiveAll, gauge, float64(st.ActiveConns))
	ch <- prometheus.MustNewConstMetric(descAccepted, counter, float64(st.Accepted))
	ch <- prometheus.MustNewConstMetric(descRefused, counter, float64(st.Refused))
	ch <- prometheus.MustNewConstMetric(descRetries, counter, float64(st.Retries))
	ch <- prometheus.MustNewConstMetric(descQueued, gauge, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(descOutOfFiles, counter, float64(st.OutOfFiles))
	if sy := st.Sync; sy != nil {
		ch <- prometheus.MustNewConstMetric(descSyncSent, counter, float64(sy.DatagramsSent))
		ch <- prometheus.MustNewConstMetric(descSyncReceived, counter, float64(sy.DatagramsReceived))
		for reason, n := range sy.Dropped {
			ch <- prometheus.MustNewConstMetric(descSyncDropped, counter, float64(n), reason)
		}
		for _, pe := range sy.Peers {
			ch <- prometheus.MustNewConstMetric(descSyncPeerConns, gauge, float64(pe.Connections), pe.Addr)
			heard := 0.0
			if !pe.LastHeard.IsZero() {
				heard = float64(pe.LastHeard.UnixNano()) / float64(time.Second)
			}
			ch <- prometheus.MustNewConstMetric(descSyncPeerAge, gauge, heard, pe.Addr)
		}
		ch <- prometheus.MustNewConstMetric(descSyncTakeovers, counter, float64(sy.Takeovers))
		ch <- prometheus.MustNewConstMetric(descSyncProbes, counter, float64(sy.ProbesSent))
		ch <- prometheus.MustNewConstMetric(descSyncProbeErr, counter, float64(sy.ProbeErrors))
	}
}
