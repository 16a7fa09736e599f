package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMaster serves what one master's vipd, lbproxy and apiserver would, over real HTTP
// servers; tests change its fields to degrade it.
type fakeMaster struct {
	mu         sync.Mutex
	state      string // VRRP state
	fault      string
	backends   map[string]string // addr -> UP/DOWN
	ready      bool
	certLeft   time.Duration
	conflict   bool
	hasLeader  bool
	leader     bool
	index      uint64
	bgp        bool
	bgpPeerUp  bool
	announced  bool
	vipd, lb   *httptest.Server
	api        *httptest.Server
	etcdMetric bool
	checkOK    bool
	dbSize     int64
}

func newFakeMaster(t *testing.T, state string, leader bool) *fakeMaster {
	f := &fakeMaster{state: state, backends: map[string]string{"10.0.0.1:6443": "UP", "10.0.0.2:6443": "UP"}, ready: true,
		certLeft: 300 * 24 * time.Hour, hasLeader: true, leader: leader, index: 5000, etcdMetric: true, bgpPeerUp: true, announced: true, checkOK: true, dbSize: 2 << 20}
	f.vipd = httptest.NewServer(http.HandlerFunc(f.serveVipd))
	f.lb = httptest.NewServer(http.HandlerFunc(f.serveLbproxy))
	f.api = httptest.NewServer(http.HandlerFunc(f.serveAPIServer))
	t.Cleanup(func() { f.vipd.Close(); f.lb.Close(); f.api.Close() })
	return f
}

func (f *fakeMaster) set(fn func(f *fakeMaster)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeMaster) certMetrics(w http.ResponseWriter, role string) {
	fmt.Fprintf(w, "# TYPE hacp_cert_expiry_seconds gauge\nhacp_cert_expiry_seconds{cert=%q,file=\"/etc/hacp/pki/%s.crt\",subject=\"CN=x\"} %g\n",
		role, role, f.certLeft.Seconds())
}

func (f *fakeMaster) serveVipd(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/status":
		if f.bgp {
			peer := "established"
			if !f.bgpPeerUp {
				peer = "active"
			}
			fmt.Fprintf(w, `{"mode":"bgp","healthy":%t,"instances":[],"bgp":{"vips":[{"prefix":"10.0.0.100/32","announced":%t}],"peers":[{"address":"10.0.1.1","state":%q}]}}`, f.checkOK, f.announced, peer)
			return
		}
		fmt.Fprintf(w, `{"mode":"vrrp","healthy":%t,"check":{"lastError":"connection refused"},"instances":[{"name":"vrid51","vrid":51,"vips":["10.0.0.100/24"],"state":%q,"priority":100,"effectivePriority":100,"fault":%q}]}`, f.checkOK, f.state, f.fault)
	case "/metrics":
		f.certMetrics(w, "check-ca")
		if f.conflict {
			fmt.Fprint(w, "# TYPE vipd_vip_conflict gauge\nvipd_vip_conflict{instance=\"vrid51\"} 1\n")
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeMaster) serveLbproxy(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/status":
		var bs []map[string]any
		for _, a := range slices.Sorted(maps.Keys(f.backends)) {
			bs = append(bs, map[string]any{"addr": a, "state": f.backends[a], "activeConns": 2})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"activeConns": 4, "backends": bs})
	case "/metrics":
		f.certMetrics(w, "check-ca")
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeMaster) serveAPIServer(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/readyz":
		if !f.ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n")
			return
		}
		fmt.Fprint(w, "[+]ping ok\nreadyz check passed\n")
	case "/version":
		fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
	case "/metrics":
		f.certMetrics(w, "serving")
		if f.etcdMetric {
			b := func(v bool) int {
				if v {
					return 1
				}
				return 0
			}
			fmt.Fprintf(w, "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader %d\n# TYPE etcd_server_is_leader gauge\netcd_server_is_leader %d\n", b(f.hasLeader), b(f.leader))
			fmt.Fprintf(w, "# TYPE etcd_server_proposals_committed_total gauge\netcd_server_proposals_committed_total %d\n", f.index)
			fmt.Fprintf(w, "# TYPE etcd_mvcc_db_total_size_in_bytes gauge\netcd_mvcc_db_total_size_in_bytes %d\n", f.dbSize)
			fmt.Fprint(w, "# TYPE etcd_server_quota_backend_bytes gauge\netcd_server_quota_backend_bytes 2.147483648e+09\n")
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeMaster) master(name string) Master {
	return Master{Name: name, Apiserver: f.api.URL, Vipd: f.vipd.URL, Lbproxy: f.lb.URL}
}

func collect(t *testing.T, ms map[string]*fakeMaster) *Report {
	t.Helper()
	cfg := DefaultConfig()
	for _, name := range slices.Sorted(maps.Keys(ms)) {
		cfg.Masters = append(cfg.Masters, ms[name].master(name))
	}
	r, err := Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestStatusHealthy(t *testing.T) {
	ms := map[string]*fakeMaster{"m1": newFakeMaster(t, "MASTER", true), "m2": newFakeMaster(t, "BACKUP", false)}
	ms["m2"].set(func(f *fakeMaster) { f.index = 4990 })
	r := collect(t, ms)
	if !r.Healthy {
		t.Fatalf("want healthy, got problems %v", r.Problems)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"m1 MASTER prio 100 2/2 up, 4 sessions ready v1.37.2 leader, index 5000, lag 0, db 2.0 MiB 3, first expires in 300 days",
		"m2 BACKUP prio 100 2/2 up, 4 sessions ready v1.37.2 follower, index 4990, lag 10, db 2.0 MiB 3, first expires in 300 days",
		"VIP 10.0.0.100/24 (vrid 51): held by m1",
		"BACKEND (state sessions) lbproxy@m1 lbproxy@m2 10.0.0.1:6443 UP 2 UP 2 10.0.0.2:6443 UP 2 UP 2",
		"OK: 2 masters healthy",
	} {
		if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Healthy || len(back.Masters) != 2 || back.Masters[1].Etcd.Lag != 10 || len(back.Masters[0].Certs) != 3 {
		t.Fatalf("JSON round trip: %s", js.String())
	}
}

func TestStatusDegraded(t *testing.T) {
	cases := []struct {
		name    string
		degrade func(m1, m2 *fakeMaster)
		want    string // the first problem
	}{
		{"two VIP holders", func(_, m2 *fakeMaster) { m2.state = "MASTER" }, "vip: 10.0.0.100/24 (vrid 51) is held by 2 masters: m1, m2"},
		{"no VIP holder", func(m1, _ *fakeMaster) { m1.state = "BACKUP" }, "vip: 10.0.0.100/24 (vrid 51) is held by no master"},
		{"instance in fault", func(_, m2 *fakeMaster) { m2.state, m2.fault = "FAULT", "interface eth0 down" }, "m2: vipd: instance vrid51 is FAULT: interface eth0 down"},
		{"VIP conflict", func(m1, _ *fakeMaster) { m1.conflict = true }, "m1: vipd: VIP conflict (vipd_vip_conflict instance=vrid51): another host claims the VIP"},
		{"backend down", func(_, m2 *fakeMaster) { m2.backends["10.0.0.2:6443"] = "DOWN" }, "m2: lbproxy: backend 10.0.0.2:6443 is DOWN"},
		{"backend of a listed master down", func(m1, _ *fakeMaster) { m1.backends[strings.TrimPrefix(m1.api.URL, "http://")] = "DOWN" }, "m1: lbproxy: backend 127.0.0.1:"},
		{"apiserver not ready", func(m1, _ *fakeMaster) { m1.ready = false }, "m1: apiserver: not ready: etcd failed: reason withheld"},
		{"etcd without leader", func(_, m2 *fakeMaster) { m2.hasLeader = false }, "m2: etcd: member has no leader"},
		{"vipd check failing", func(_, m2 *fakeMaster) { m2.checkOK = false }, "m2: vipd: health check failing (connection refused)"},
		{"etcd db near quota", func(m1, _ *fakeMaster) { m1.dbSize = 1800 << 20 }, "m1: etcd: db 1.8 GiB is 87% of its 2.0 GiB quota"},
		{"etcd lagging", func(_, m2 *fakeMaster) { m2.index = 100 }, "m2: etcd: 4900 Raft entries behind the leader (etcd-max-lag 1000)"},
		{"certificate expiring", func(_, m2 *fakeMaster) { m2.certLeft = 10 * 24 * time.Hour }, "m2: apiserver: certificate serving (/etc/hacp/pki/serving.crt) expires in 10 days"},
		{"certificate expired", func(m1, _ *fakeMaster) { m1.certLeft = -3 * time.Hour }, "m1: apiserver: certificate serving (/etc/hacp/pki/serving.crt) expired 3h ago"},
		{"BGP peer down", func(m1, m2 *fakeMaster) { m1.bgp, m2.bgp, m2.bgpPeerUp = true, true, false }, "m2: vipd: BGP session with 10.0.1.1 is active"},
		{"BGP VIP not announced", func(m1, m2 *fakeMaster) { m1.bgp, m2.bgp, m1.announced, m2.announced = true, true, false, false }, "vip: 10.0.0.100/32 is announced by no master"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m1, m2 := newFakeMaster(t, "MASTER", true), newFakeMaster(t, "BACKUP", false)
			m1.set(func(m1 *fakeMaster) { m2.set(func(m2 *fakeMaster) { tc.degrade(m1, m2) }) })
			r := collect(t, map[string]*fakeMaster{"m1": m1, "m2": m2})
			if r.Healthy || len(r.Problems) == 0 {
				t.Fatal("want degraded, got healthy")
			}
			got := r.Problems[0].String()
			if tc.name == "backend of a listed master down" && !strings.HasSuffix(got, " (m1) is DOWN") {
				t.Fatalf("the backend is not named after its master: %q", got)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("first problem %q, want %q (all: %v)", got, tc.want, r.Problems)
			}
			var text bytes.Buffer
			if err := WriteText(&text, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "DEGRADED") || !strings.Contains(text.String(), tc.want) {
				t.Fatalf("text output lacks the verdict %q:\n%s", tc.want, text.String())
			}
		})
	}
}

// TestStatusUnreachableFirst: a master whose programs do not answer (closed, or stopped
// and so timing out) is the first problem, ahead of the backends DOWN it causes elsewhere.
func TestStatusUnreachableFirst(t *testing.T) {
	for _, how := range []string{"closed", "hung"} {
		t.Run(how, func(t *testing.T) {
			m1, m2 := newFakeMaster(t, "MASTER", true), newFakeMaster(t, "BACKUP", false)
			m1.set(func(f *fakeMaster) { f.backends["10.0.0.2:6443"] = "DOWN" })
			cfg := DefaultConfig()
			cfg.Timeout = 200 * time.Millisecond
			cfg.Masters = []Master{m1.master("m1"), m2.master("m2")}
			if how == "closed" {
				m2.vipd.Close()
				m2.lb.Close()
				m2.api.Close()
			} else {
				release := make(chan struct{})
				hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
				t.Cleanup(func() { close(release); hang.Close() })
				cfg.Masters[1] = Master{Name: "m2", Apiserver: hang.URL, Vipd: hang.URL, Lbproxy: hang.URL}
			}
			r, err := Collect(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Healthy || r.Problems[0].Master != "m2" || !strings.Contains(r.Problems[0].Message, "unreachable") {
				t.Fatalf("want m2 unreachable first, got %v", r.Problems)
			}
			if !strings.HasPrefix(r.Reason(), "m2: vipd, lbproxy, apiserver: unreachable: ") || !strings.Contains(r.Reason(), "(and 1 more)") {
				t.Fatalf("reason %q", r.Reason())
			}
		})
	}
}
