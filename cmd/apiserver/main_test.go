package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
)

// The test binary doubles as apiserver: with APISERVER_TEST_MAIN=1 it runs main's run.
func TestMain(m *testing.M) {
	if os.Getenv("APISERVER_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func apiserver(t *testing.T, args ...string) (int, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "APISERVER_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

func TestConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("secure-port: 6443\nbind-address: not-an-ip\netcd-initial-cluster-state: maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("secure-port: 6443\nsecure-prot: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("t1,alice,1,\"dev,ops\"\n\nt2,bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caPEM := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	badPolicy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(badPolicy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n- level: Loud\n  nonResourceURLs: [\"/a*b\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	typoPolicy := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typoPolicy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  verb: [get]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	plainEtcd := filepath.Join(dir, "plain-etcd.yaml")
	if err := os.WriteFile(plainEtcd, []byte("etcd-name: m1\netcd-listen-client-url: http://127.0.0.1:2379\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badEncryption := filepath.Join(dir, "encryption.yaml")
	if err := os.WriteFile(badEncryption, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - {name: key1, secret: c2hvcnQ=}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	typoEncryption := filepath.Join(dir, "typo-encryption.yaml")
	if err := os.WriteFile(typoEncryption, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  provider:\n  - identity: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"example config is valid", []string{"--config", "../../configs/apiserver.yaml", "--check-config"}, 0, []string{"is valid"}},
		{"packaged default config is valid", []string{"--config", "../../deploy/packages/config/apiserver.yaml", "--check-config"}, 0, []string{"is valid"}},
		{"help", []string{"--help"}, 0, []string{"-etcd-initial-cluster", "-secure-port"}},
		{"bad values name file, line and key", []string{"--config", bad, "--check-config"}, 2, []string{bad + ":2: bind-address:", bad + ":3: etcd-initial-cluster-state:"}},
		{"unknown key", []string{"--config", unknown}, 2, []string{unknown + ":2:", "secure-prot"}},
		{"bad flag", []string{"--secure-port", "70000", "--check-config"}, 2, []string{"secure-port"}},
		{"unknown admission plugin", []string{"--enable-admission-plugins", "NamespaceLifecycle,Nope", "--check-config"}, 2, []string{`flag --enable-admission-plugins: enable-admission-plugins plugin "Nope" is unknown`}},
		{"election timeout below 5 heartbeats", []string{"--etcd-heartbeat-interval", "100ms", "--etcd-election-timeout", "300ms", "--check-config"}, 2, []string{"flag --etcd-election-timeout: must be at least 5 heartbeat intervals"}},
		{"bad token file line names file:line", []string{"--token-auth-file", tokens, "--check-config"}, 2, []string{"flag --token-auth-file: " + tokens + ":3: want at least 3 columns"}},
		{"tls-cert-file without client-ca-file", []string{"--tls-cert-file", caPEM, "--tls-private-key-file", caPEM, "--check-config"}, 2, []string{"flag --tls-cert-file: needs client-ca-file", "flag --tls-cert-file: load serving certificate and key"}},
		{"unreadable serving certificate", []string{"--tls-cert-file", missing, "--tls-private-key-file", missing, "--client-ca-file", missing, "--check-config"}, 2, []string{"flag --tls-cert-file: load serving certificate and key: open " + missing, "flag --client-ca-file: open " + missing}},
		{"client CA without certificates", []string{"--client-ca-file", caPEM, "--check-config"}, 2, []string{"flag --client-ca-file: " + caPEM + ": no PEM certificate"}},
		{"unreadable signing key", []string{"--service-account-signing-key-file", missing, "--check-config"}, 2, []string{"flag --service-account-signing-key-file: open " + missing}},
		{"example audit policy is valid", []string{"--audit-policy-file", "../../configs/audit-policy.yaml", "--audit-log-path", auditLog, "--check-config"}, 0, []string{"is valid"}},
		{"bad audit policy names file, line and key", []string{"--audit-policy-file", badPolicy, "--audit-log-path", auditLog, "--check-config"}, 2, []string{
			"flag --audit-policy-file: " + badPolicy + ":5: rules.1.level: Unsupported value: \"Loud\"",
			badPolicy + ":6: rules.1.nonResourceURLs.0: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule"}},
		{"unknown key in audit policy", []string{"--audit-policy-file", typoPolicy, "--audit-log-path", auditLog, "--check-config"}, 2, []string{typoPolicy + ":5: verb: unknown key (did you mean \"verbs\"?)"}},
		{"audit policy without a log", []string{"--audit-policy-file", "../../configs/audit-policy.yaml", "--check-config"}, 2, []string{"flag --audit-policy-file: needs audit-log-path"}},
		{"unreadable audit webhook kubeconfig", []string{"--audit-policy-file", "../../configs/audit-policy.yaml", "--audit-webhook-config-file", missing, "--check-config"}, 2, []string{"flag --audit-webhook-config-file: open " + missing}},
		{"unreadable admission configuration", []string{"--admission-control-config-file", missing, "--check-config"}, 2, []string{"flag --admission-control-config-file: open " + missing}},
		{"bad audit webhook mode", []string{"--audit-webhook-mode", "eventually", "--check-config"}, 2, []string{`flag --audit-webhook-mode: must be batch or blocking, not "eventually"`}},
		{"unknown audit event version", []string{"--audit-webhook-version", "audit.k8s.io/v1beta1", "--audit-log-truncate-max-event-size", "0", "--check-config"}, 2, []string{
			`flag --audit-webhook-version: must be audit.k8s.io/v1, the only audit event version served, not "audit.k8s.io/v1beta1"`,
			"flag --audit-log-truncate-max-event-size: must be positive"}},
		{"unknown kubelet address type", []string{"--kubelet-preferred-address-types", "InternalIP,Nope", "--check-config"}, 2, []string{`flag --kubelet-preferred-address-types: "Nope" is not one of`}},
		{"kubelet client key missing", []string{"--kubelet-client-certificate", caPEM, "--check-config"}, 2, []string{"flag --kubelet-client-certificate: kubelet-client-certificate and kubelet-client-key go together"}},
		{"unreadable kubelet CA", []string{"--kubelet-certificate-authority", missing, "--check-config"}, 2, []string{"flag --kubelet-certificate-authority: read kubelet certificate authority: open " + missing}},
		{"plain HTTP etcd client URL", []string{"--etcd-listen-client-url", "http://127.0.0.1:2379", "--check-config"}, 2, []string{
			`flag --etcd-listen-client-url: "http://127.0.0.1:2379" is plain HTTP`, "etcd-allow-insecure-client: true"}},
		{"plain HTTP etcd client URL names file and line", []string{"--config", plainEtcd, "--check-config"}, 2, []string{plainEtcd + ":2: etcd-listen-client-url: "}},
		{"plain HTTP etcd client URL opted into", []string{"--config", plainEtcd, "--etcd-allow-insecure-client", "--check-config"}, 0, []string{"is valid"}},
		{"plain HTTP etcd client URL with external etcd", []string{"--etcd-listen-client-url", "http://127.0.0.1:2379", "--etcd-servers", "https://10.77.0.1:2379", "--check-config"}, 0, []string{"is valid"}},
		{"etcd serving certificate alone", []string{"--etcd-cert-file", caPEM, "--check-config"}, 2, []string{
			"etcd-key-file: needed with etcd-cert-file", "etcd-trusted-ca-file: needed with etcd-cert-file", "etcd-certfile: needed with etcd-cert-file"}},
		{"etcd serving certificate on a plain HTTP URL", []string{"--etcd-listen-client-url", "http://127.0.0.1:2379", "--etcd-allow-insecure-client",
			"--etcd-trusted-ca-file", caPEM, "--check-config"}, 2, []string{`flag --etcd-trusted-ca-file: needs an https:// etcd-listen-client-url`}},
		{"apiserver etcd client certificate without the member's", []string{"--etcd-certfile", caPEM, "--etcd-keyfile", caPEM, "--check-config"}, 2, []string{
			"flag --etcd-certfile: etcd-certfile, etcd-keyfile and etcd-cafile for the embedded etcd member go with etcd-cert-file"}},
		{"unreadable etcd certificates", []string{"--etcd-cert-file", missing, "--etcd-key-file", missing, "--etcd-trusted-ca-file", caPEM,
			"--etcd-certfile", missing, "--etcd-keyfile", missing, "--check-config"}, 2, []string{
			"flag --etcd-cert-file: load certificate and key: open " + missing, "flag --etcd-certfile: load certificate and key: open " + missing,
			"flag --etcd-trusted-ca-file: " + caPEM + ": no PEM certificate"}},
		{"example encryption configuration is valid", []string{"--encryption-provider-config", "../../configs/encryption.yaml", "--check-config"}, 0, []string{"is valid"}},
		{"bad encryption configuration names file, line and key", []string{"--encryption-provider-config", badEncryption, "--check-config"}, 2, []string{
			"flag --encryption-provider-config: " + badEncryption + ":8: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"}},
		{"unknown key in encryption configuration", []string{"--encryption-provider-config", typoEncryption, "--check-config"}, 2, []string{
			"flag --encryption-provider-config: " + typoEncryption + ":5: provider: unknown field"}},
		{"LAN etcd timers", []string{"--etcd-heartbeat-interval", "50ms", "--etcd-election-timeout", "500ms", "--check-config"}, 0, []string{"is valid"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := apiserver(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestRunAndStop starts the program as `make run` does (on free ports), checks
// it writes a kubeconfig and becomes ready, and that SIGTERM stops it cleanly.
func TestRunAndStop(t *testing.T) {
	dir := t.TempDir()
	client, err := embedetcd.FreeLocalHTTPSURL()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := embedetcd.FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	cmd, url, _ := startServing(t, "--config", "../../configs/apiserver.yaml", "--data-dir", dir, "--secure-port", "0",
		"--etcd-listen-client-url", client, "--etcd-listen-peer-urls", peer, "--shutdown-delay", "0s")
	if _, err := os.Stat(filepath.Join(dir, "admin.kubeconfig")); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d", resp.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// startServing runs the program (this test binary with APISERVER_TEST_MAIN) with args until
// it logs its serving line, and returns it, the URL it serves and its log up to then; the
// rest of its stderr is drained, and the test's cleanup kills it.
func startServing(t *testing.T, args ...string) (cmd *exec.Cmd, url, logs string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "APISERVER_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var b strings.Builder
	for url == "" && sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if rest, ok := strings.CutPrefix(sc.Text(), "apiserver: serving "); ok {
			url = rest
		}
	}
	if url == "" {
		t.Fatalf("no serving line:\n%s", b.String())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return cmd, url, b.String()
}
