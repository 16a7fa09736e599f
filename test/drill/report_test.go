package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	hnetns "github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
)

func TestReportJSONShape(t *testing.T) {
	r := newReport()
	zero := 0
	r.set(stackHACP, scKillMaster, metrics{VIPFailoverS: 0.4, APIDowntimeS: 1.1, WritesAcked: 300, FailedRequests: 1, LastFailureS: 0.9, WatchGapS: 1.2})
	r.set(stackHACP, scPartitionMaster, metrics{IsolatedWrites: &zero})
	r.set(stackAnchor, scKillMaster, metrics{VIPFailoverS: 3.2, APIDowntimeS: 12, WritesAcked: 100, FailedRequests: 12, LastFailureS: 12})
	r.set(stackAnchorTuned, scKillMaster, metrics{VIPFailoverS: -1})
	r.setLeader(stackHACP, scKillMaster, "m1")
	r.setLeader(stackAnchor, scKillMaster, "m3")
	dir := t.TempDir()
	if err := r.write(dir, "header\n"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if len(top) != 1 || top["stacks"] == nil {
		t.Fatalf("top-level keys: want only \"stacks\", got %s", data)
	}
	var stacks map[string]map[string]map[string]any
	if err := json.Unmarshal(top["stacks"], &stacks); err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range stacks {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"hacp", "keepalived+haproxy", "keepalived+haproxy(tuned)"}; !slices.Equal(names, want) {
		t.Errorf("stacks = %v, want %v", names, want)
	}
	required := []string{"vip_failover_s", "api_downtime_s", "writes_acked", "writes_lost", "watch_gap_s", "split_brain_s", "failed_requests", "last_failure_s"}
	for stack, scs := range stacks {
		for sc, m := range scs {
			for _, k := range required {
				if _, ok := m[k]; !ok {
					t.Errorf("%s %s: missing %q", stack, sc, k)
				}
				if _, ok := m[k].(float64); !ok {
					t.Errorf("%s %s: %q is %T, want a number", stack, sc, k, m[k])
				}
			}
		}
	}
	if _, ok := stacks["hacp"]["partition-master"]["isolated_writes_accepted"]; !ok {
		t.Error("partition-master lacks isolated_writes_accepted")
	}
	if _, ok := stacks["hacp"]["kill-master"]["isolated_writes_accepted"]; ok {
		t.Error("kill-master has isolated_writes_accepted")
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| metric | hacp | keepalived+haproxy | keepalived+haproxy(tuned) | hacp / keepalived+haproxy | hacp / keepalived+haproxy(tuned) |",
		"| failed_requests | 1 | 12 | 0 | 0.08 | — |",
		"| vip_failover_s | 0.400 | 3.200 | never | 0.12 | — |",
		"| last_failure_s |",
		"| kill-master vip_failover_s <= 0.500 and <= half the guide anchor's | 6 | 0.400 | 3.200 | never | yes |",
		"| kill-master failed_requests <= 2 | 7 | 1 | 12 | 0 | yes |",
		"| etcd leader before the fault | m1 | m3 | | | |",
		"| kill-master api_downtime_s <= 1.500 and <= half the guide anchor's | 6 | 1.100 | 12 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestTimelinePNG(t *testing.T) {
	tl := timeline{}
	tl.add(scKillMaster, stackHACP, []float64{-1, -0.5, 0.2, 0.9})
	tl.add(scKillMaster, stackAnchor, []float64{-1, 3.5})
	tl.add(scRejoin, stackHACP, nil)
	png, err := tl.plotPNG()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("not a PNG: % x", png[:min(8, len(png))])
	}
	if _, err := (timeline{}).plotPNG(); err == nil {
		t.Error("empty timeline: want an error")
	}
}

func TestParseList(t *testing.T) {
	aliases := map[string]string{"guide": stackAnchor}
	got, err := parseList("guide, hacp", allStacks, aliases)
	if err != nil || !slices.Equal(got, []string{stackHACP, stackAnchor}) {
		t.Errorf("parseList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "nope", "hacp,nope"} {
		if _, err := parseList(bad, allStacks, aliases); err == nil {
			t.Errorf("parseList(%q): want an error", bad)
		}
	}
}

func TestJudge(t *testing.T) {
	one, zero := 1, 0
	long, short := 0.25, 0.05
	hacp := hacpStack(100 * time.Millisecond)
	tests := []struct {
		name  string
		spec  stackSpec
		m     metrics
		fails int
	}{
		{"clean", hacp, metrics{IsolatedWrites: &zero, SplitBrainAfterHeal: &short}, 0},
		{"hacp lost a write", hacp, metrics{WritesLost: 1}, 1},
		{"anchor lost a write is reported, not failed", guideStack(), metrics{WritesLost: 1}, 0},
		{"isolated write on any stack", guideStack(), metrics{IsolatedWrites: &one}, 1},
		{"split brain after heal", hacp, metrics{SplitBrainAfterHeal: &long}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judge(tt.spec, "x", tt.m); len(got) != tt.fails {
				t.Errorf("judge = %v, want %d failures", got, tt.fails)
			}
		})
	}
}

func TestRenderAnchor(t *testing.T) {
	dir := t.TempDir()
	var ms []*host
	for i, name := range []string{"m1", "m2", "m3"} {
		addr := netip.MustParseAddr(subnet + "." + []string{"11", "12", "13"}[i])
		ms = append(ms, &host{Host: &hnetns.Host{Name: name, Iface: "eth0", Addr: addr}})
	}
	for _, spec := range []stackSpec{guideStack(), tunedStack(100 * time.Millisecond)} {
		t.Run(spec.Name, func(t *testing.T) {
			ka, ha, err := spec.renderAnchor(filepath.Join(dir, shortName(spec.Name)), 1, ms[1], ms)
			if err != nil {
				t.Fatal(err)
			}
			kaText, _ := os.ReadFile(ka)
			haText, _ := os.ReadFile(ha)
			for _, want := range []string{"priority 100", "state BACKUP", "virtual_router_id 51", vipAddr + "/24", "interface eth0"} {
				if !strings.Contains(string(kaText), want) {
					t.Errorf("keepalived.conf lacks %q:\n%s", want, kaText)
				}
			}
			for _, want := range []string{"server m3 10.77.0.13:6443 check check-ssl verify none", "option httpchk GET /healthz", "http-check expect status 200", "bind *:8443"} {
				if !strings.Contains(string(haText), want) {
					t.Errorf("haproxy.cfg lacks %q:\n%s", want, haText)
				}
			}
			// haproxy checks its own configuration for real.
			testenv.RequireCommand(t, "haproxy")
			if out, err := exec.Command("haproxy", "-c", "-f", ha).CombinedOutput(); err != nil {
				t.Errorf("haproxy -c: %v\n%s", err, out)
			}
			if spec.VRRPVersion == 2 {
				if !strings.Contains(string(kaText), "auth_type PASS") || !strings.Contains(string(kaText), "advert_int 1\n") {
					t.Errorf("guide keepalived.conf:\n%s", kaText)
				}
			} else if !strings.Contains(string(kaText), "vrrp_version 3") || !strings.Contains(string(kaText), "advert_int 0.1\n") || strings.Contains(string(kaText), "auth_type") {
				t.Errorf("tuned keepalived.conf:\n%s", kaText)
			}
		})
	}
}

func TestTargetsMissed(t *testing.T) {
	r := newReport()
	r.set(stackHACP, scKillMaster, metrics{VIPFailoverS: 0.45, APIDowntimeS: 1.2})
	r.set(stackAnchor, scKillMaster, metrics{VIPFailoverS: 0.8, APIDowntimeS: -1})
	r.set(stackHACP, scGracefulMaster, metrics{FailedRequests: 1, WatchGapS: -1})
	r.set(stackAnchorTuned, scGracefulMaster, metrics{FailedRequests: 0, WatchGapS: 1.2})
	lines := strings.Join(r.targetLines(), "\n")
	for _, want := range []string{
		"| kill-master vip_failover_s <= 0.500 and <= half the guide anchor's | 6 | 0.450 | 0.800 | — | no |",
		"| kill-master api_downtime_s <= 1.500 and <= half the guide anchor's | 6 | 1.200 | never | — | yes |",
		"| kill-master watch_gap_s <= 1.500 | 19 | 0 | 0 | — | yes |",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("targets lack %q:\n%s", want, lines)
		}
	}
	for _, want := range []string{
		"| graceful-master failed_requests <= 0 | 19 | 1 | — | 0 | no |",
		"| graceful-master watch_gap_s <= 1.500 | 19 | never | — | 1.200 | no |",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("targets lack %q:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "kill-apiserver") {
		t.Errorf("targets list a scenario that did not run:\n%s", lines)
	}
}
