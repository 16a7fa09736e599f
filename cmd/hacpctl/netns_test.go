package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/ctl"
)

// The masters' subnet and VIP of TestStatusOnMasters.
const (
	ctlSubnet = "10.77.58"
	ctlVIP    = ctlSubnet + ".100"
)

var binDir string // apiserver, vipd and lbproxy, built by TestMain when running as root

func TestMain(m *testing.M) {
	if os.Getenv("HACPCTL_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "hctl-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/hacp/hacp/cmd/apiserver", "github.com/hacp/hacp/cmd/vipd", "github.com/hacp/hacp/cmd/lbproxy")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startMaster starts the apiserver (embedded etcd member of a cluster over masters),
// lbproxy and vipd on h, each program's status also on its TLS listener, and returns the
// apiserver's data directory. vipdArgs come after vipd's own and win over them.
func startMaster(t *testing.T, h *netns.Host, masters []*netns.Host, b *certs.Bundle, priority int, vipdArgs ...string) string {
	t.Helper()
	data := t.TempDir()
	var initial, backends []string
	for _, m := range masters {
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", m.Name, m.Addr))
		backends = append(backends, "--backend", fmt.Sprintf("%s:6443", m.Addr))
	}
	statusTLS := func(port int) []string {
		return []string{"--status-tls-addr", fmt.Sprintf("%s:%d", h.Addr, port), "--status-tls-cert-file", b.ServingCert,
			"--status-tls-key-file", b.ServingKey, "--status-client-ca-file", b.CACert}
	}
	h.Start(filepath.Join(binDir, "apiserver"), "--bind-address", "0.0.0.0", "--secure-port", "6443", "--data-dir", data,
		"--tls-cert-file", b.ServingCert, "--tls-private-key-file", b.ServingKey, "--client-ca-file", b.CACert,
		"--shutdown-delay", "0s", "--etcd-unsafe-no-fsync", "--etcd-name", h.Name,
		"--etcd-initial-cluster", strings.Join(initial, ","), "--etcd-listen-peer-urls", fmt.Sprintf("http://%s:2380", h.Addr))
	h.Start(filepath.Join(binDir, "lbproxy"), append(append([]string{"--listen", ":8443", "--check-ca", b.CACert,
		"--check-interval", "500ms", "--status-addr", "127.0.0.1:9443"}, backends...), statusTLS(9444)...)...)
	h.Start(filepath.Join(binDir, "vipd"), append(append([]string{"--iface", "eth0", "--vip", ctlVIP + "/24", "--vrid", "58",
		"--priority", fmt.Sprint(priority), "--advert-interval", "100ms", "--check-url", "https://127.0.0.1:8443/healthz",
		"--check-ca-file", b.CACert, "--status-addr", "127.0.0.1:9901"}, statusTLS(9902)...), vipdArgs...)...)
	return data
}

// ctlCluster is two masters on one bridge, m1 (priority 101) and m2 (100), and the hacpctl
// configuration file that lists them.
type ctlCluster struct {
	net    *netns.Net
	m1, m2 *netns.Host
	config string
}

// startCluster starts the two masters of ctlSubnet (vipdArgs go to both vipd) and writes
// the hacpctl configuration: the admin certificate, m1's etcd client certificate and URL,
// and every program's TLS status address.
func startCluster(t *testing.T, vipdArgs ...string) *ctlCluster {
	t.Helper()
	n := netns.New(t, "hctl-", ctlSubnet)
	m1, m2 := n.AddHost("m1", 1), n.AddHost("m2", 2)
	masters := []*netns.Host{m1, m2}
	b, err := certs.Ensure(t.TempDir(), certs.Options{Hosts: []string{m1.Addr.String(), m2.Addr.String(), ctlVIP, "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	data1 := startMaster(t, m1, masters, b, 101, vipdArgs...)
	startMaster(t, m2, masters, b, 100, vipdArgs...)

	cfg := fmt.Sprintf("ca-file: %s\ncert-file: %s\nkey-file: %s\n", b.CACert, b.AdminCert, b.AdminKey)
	cfg += fmt.Sprintf("etcd-ca-file: %s\netcd-cert-file: %s\netcd-key-file: %s\ntimeout: 2s\nmasters:\n",
		filepath.Join(data1, "pki", certs.EtcdCACertFile), filepath.Join(data1, "pki", certs.EtcdClientCertFile), filepath.Join(data1, "pki", certs.EtcdClientKeyFile))
	for _, m := range masters {
		cfg += fmt.Sprintf("  - name: %s\n    apiserver: https://%s:6443\n    vipd: https://%s:9902\n    lbproxy: https://%s:9444\n", m.Name, m.Addr, m.Addr, m.Addr)
		if m == m1 {
			cfg += "    etcd: https://127.0.0.1:2379\n"
		}
	}
	file := filepath.Join(t.TempDir(), "hacpctl.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &ctlCluster{net: n, m1: m1, m2: m2, config: file}
}

// hacpctl runs this test binary as hacpctl inside h.
func hacpctl(t *testing.T, h *netns.Host, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	cmd := h.Command(t.Context(), "env", append([]string{"HACPCTL_TEST_MAIN=1", self}, args...)...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// TestStatusOnMasters runs hacpctl status on m1 of two real masters (apiserver with its
// etcd member, lbproxy, vipd in network namespaces): healthy, exit 0, m1 holds the VIP; then
// m2's processes are stopped and killed, and it exits 1 naming m2.
func TestStatusOnMasters(t *testing.T) {
	c := startCluster(t)
	m1, m2, file := c.m1, c.m2, c.config

	var stdout, stderr string
	var code int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		stdout, stderr, code = hacpctl(t, m1, "status", "--config", file)
		// Healthy, and m1 (priority 101) holds the VIP: it may have started with its check
		// failing (lbproxy not ready yet), so m2 held it a moment, until m1 preempted.
		if (code == 0 && strings.Contains(stdout, "held by m1\n")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling until the cluster is up, not synchronising
	}
	if code != 0 || !strings.Contains(stdout, "held by m1\n") {
		t.Fatalf("hacpctl status did not become healthy with m1 holding the VIP: exit %d, %s\n%s", code, stderr, stdout)
	}
	t.Logf("hacpctl status on m1:\n%s", stdout)
	flat := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"VIP " + ctlVIP + "/24 (vrid 58): held by m1", "OK: 2 masters healthy", "2/2 up", "ready v1.", "leader,", "follower,"} {
		if !strings.Contains(flat, want) {
			t.Errorf("status output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = hacpctl(t, m1, "status", "--config", file, "-o", "json")
	var r ctl.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
		t.Fatalf("-o json: exit %d, %v, %s\n%s", code, err, stderr, stdout)
	}
	if e1, e2 := r.Masters[0].Etcd, r.Masters[1].Etcd; e1 == nil || e2 == nil || e1.Source != "etcd" || e2.Source != "metrics" || e1.ID == e2.ID {
		t.Fatalf("etcd members: %+v and %+v, want m1's through its client URL, m2's from its apiserver's metrics", e1, e2)
	}
	if len(r.Masters[1].Certs) == 0 || r.Masters[1].Vipd == nil || r.Masters[1].Vipd.Instances[0].State != "BACKUP" {
		t.Fatalf("m2: %+v", r.Masters[1])
	}

	netns.KillAll(m2.NS) // SIGSTOP, then SIGKILL, every process of m2
	for _, p := range m2.Procs() {
		<-p.Done()
	}
	stdout, stderr, code = hacpctl(t, m1, "status", "--config", file)
	if code != 1 || !strings.HasPrefix(stderr, "hacpctl status: DEGRADED: m2: vipd, lbproxy, apiserver: unreachable: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("with m2 killed: exit %d, stderr %q; want 1 and one line naming m2\n%s", code, stderr, stdout)
	}
	t.Logf("hacpctl status on m1 with m2 killed (exit %d):\n%s%s", code, stdout, stderr)
	if !strings.Contains(stdout, "DEGRADED") {
		t.Fatalf("the view does not say DEGRADED:\n%s", stdout)
	}
}
