package main

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/certs"
)

func TestComputeFlunders(t *testing.T) {
	reqs := []request{ack("f1", 900, 990), ack("f2", 1010, 1100), fail("f3", 1100, 2100), ack("f4", 2100, 2200), ack("f5", 2200, 2300)}
	tests := []struct {
		name                  string
		watch                 []watchEvent
		gap                   float64
		acked, unseen, failed int
	}{
		{
			name:  "every flunder seen, the watch back 1.3s after the fault",
			watch: []watchEvent{{"f1", ms(995)}, {"f2", ms(2300)}, {"f4", ms(2310)}, {"f5", ms(2320)}},
			gap:   1.3, acked: 4, unseen: 0, failed: 1,
		},
		{
			name:  "a relist after the fault reports what the watch missed",
			watch: []watchEvent{{"f1", ms(995)}, {"f5", ms(2400)}, {"f2", ms(2400)}, {"f4", ms(2400)}},
			gap:   1.4, acked: 4, unseen: 0, failed: 1,
		},
		{
			name:  "created but never seen",
			watch: []watchEvent{{"f1", ms(995)}, {"f4", ms(2250)}},
			gap:   1.25, acked: 4, unseen: 2, failed: 1,
		},
		{
			name:  "nothing after the fault",
			watch: []watchEvent{{"f1", ms(995)}},
			gap:   -1, acked: 4, unseen: 3, failed: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := eventLog{Fault: ms(1000), FlunderRequests: reqs, FlunderWatch: tt.watch}
			m := compute(&l, 0)
			if m.FlunderWatchGapS == nil || m.FlundersAcked == nil || m.FlundersUnseen == nil || m.FlunderFailedRequests == nil {
				t.Fatalf("flunder metrics missing: %+v", m)
			}
			if *m.FlunderWatchGapS != tt.gap || *m.FlundersAcked != tt.acked || *m.FlundersUnseen != tt.unseen || *m.FlunderFailedRequests != tt.failed {
				t.Errorf("gap %v acked %d unseen %d failed %d, want %v %d %d %d", *m.FlunderWatchGapS, *m.FlundersAcked, *m.FlundersUnseen, *m.FlunderFailedRequests,
					tt.gap, tt.acked, tt.unseen, tt.failed)
			}
		})
	}
	// Without --proxy-paths the log has no flunders and the metrics stay out of report.json.
	m := compute(&eventLog{Fault: ms(1000), Requests: reqs}, 0)
	if m.FlunderWatchGapS != nil || m.FlundersAcked != nil {
		t.Errorf("flunder metrics without flunders: %+v", m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "flunder") {
		t.Errorf("report.json row without flunders mentions them: %s", data)
	}
}

func TestReportProxyPaths(t *testing.T) {
	r := newReport()
	gap, acked, unseen, failed := 0.8, 40, 0, 1
	r.set(stackHACP, scKillMaster, metrics{WatchGapS: 1.0, FlunderWatchGapS: &gap, FlundersAcked: &acked, FlundersUnseen: &unseen, FlunderFailedRequests: &failed})
	r.ProxyPaths = map[string][]pathResult{
		stackHACP: {
			{Path: "pods/exec", OK: true, Attempts: 1, Seconds: 0.4},
			{Path: "nodes/proxy", OK: true, Attempts: 2, Seconds: 3.1},
		},
		stackAnchor: {
			{Path: "pods/exec", OK: true, Attempts: 1, Seconds: 0.5},
			{Path: "nodes/proxy", Error: "GET /api/v1/nodes/drill-node-0/proxy/healthz: 503 | no route", Attempts: 12, Seconds: 60},
		},
	}
	dir := t.TempDir()
	if err := r.write(dir, "header\n"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top struct {
		Stacks     map[string]map[string]map[string]any `json:"stacks"`
		ProxyPaths map[string][]map[string]any          `json:"proxy_paths"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if got := top.ProxyPaths[stackAnchor][1]; got["path"] != "nodes/proxy" || got["ok"] != false || !strings.Contains(got["error"].(string), "503") {
		t.Errorf("proxy_paths[%s][1] = %v", stackAnchor, got)
	}
	if got := top.Stacks[stackHACP][scKillMaster]["flunder_watch_gap_s"]; got != 0.8 {
		t.Errorf("flunder_watch_gap_s = %v, want 0.8", got)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| path | hacp | keepalived+haproxy |",
		"| pods/exec | ok (0.4s) | ok (0.5s) |",
		"| nodes/proxy | ok (2 attempts, 3.1s) | **FAILED** after 12 attempts: GET /api/v1/nodes/drill-node-0/proxy/healthz: 503 \\| no route |",
		"| flunder_watch_gap_s | 0.800 |",
		"| flunders_unseen | 0 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	fails := proxyPathFailures(r.ProxyPaths)
	if len(fails) != 1 || !strings.Contains(fails[0], "keepalived+haproxy proxy path nodes/proxy: GET") {
		t.Errorf("proxyPathFailures = %q, want the one failed path", fails)
	}
}

func TestKwokNodeConfig(t *testing.T) {
	c := &cluster{dir: t.TempDir(), ext: &extensions{}, d: &drill{}}
	c.d.client = &host{Host: &hnetns.Host{Name: "client", Addr: netip.MustParseAddr(subnet + ".10")}}
	b, err := certs.Ensure(filepath.Join(c.dir, "pki"), certs.Options{Hosts: []string{c.d.client.Addr.String(), sampleServerName}})
	if err != nil {
		t.Fatal(err)
	}
	c.d.bundle = b
	args, err := c.kwokNodeArgs()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, " ")
	for _, want := range []string{"--node-port=10250", "--server-address=10.77.0.10:10250", "--tls-cert-file=" + c.d.bundle.ServingCert} {
		if !strings.Contains(joined, want) {
			t.Errorf("kwok args %q lack %q", joined, want)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(c.dir, "kwok-node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: ClusterLogs", "logsFile: " + c.ext.logFile, "kind: ClusterExec", "kind: ClusterAttach", "kind: ClusterPortForward", "port: 9000"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("kwok config lacks %q:\n%s", want, cfg)
		}
	}
	log, err := os.ReadFile(c.ext.logFile)
	if err != nil || !strings.HasPrefix(string(log), "2026-01-01T00:00:01.000000000Z stdout F first line\n") {
		t.Errorf("container log %q %v", log, err)
	}
}
