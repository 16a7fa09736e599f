package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testpki"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
)

// etcdFiles are an external etcd's client TLS files as an operator has them: the CA that
// signed etcd's serving certificate, and a client certificate etcd trusts.
type etcdFiles struct{ ca, cert, key string }

// startTLSEtcd starts a real etcd member on loopback that serves TLS only and requires client
// certificates of its CA, and returns its client URL and the files to reach it with.
func startTLSEtcd(t *testing.T) (string, etcdFiles) {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "etcd-ca")
	srvCert, srvKey := ca.Serving(t, "etcd")
	cliCert, cliKey := ca.Client(t, "apiserver-etcd-client")
	files := etcdFiles{ca: testpki.WriteFile(t, dir, "ca.crt", ca.PEM),
		cert: testpki.WriteFile(t, dir, "client.crt", cliCert), key: testpki.WriteFile(t, dir, "client.key", cliKey)}
	cfg := embedetcd.Config{Name: "default", DataDir: filepath.Join(dir, "etcd"), CertFile: testpki.WriteFile(t, dir, "server.crt", srvCert),
		KeyFile: testpki.WriteFile(t, dir, "server.key", srvKey), TrustedCAFile: files.ca, UnsafeNoFsync: true, LogLevel: "off", StartTimeout: 30 * time.Second}
	for range 5 {
		var err error
		if cfg.ClientURL, err = embedetcd.FreeLocalHTTPSURL(); err != nil {
			t.Fatal(err)
		}
		if cfg.PeerURL, err = embedetcd.FreeLocalURL(); err != nil {
			t.Fatal(err)
		}
		e, err := embedetcd.Start(cfg)
		if embedetcd.IsAddrInUse(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e.ClientURL(), files
	}
	t.Fatal("no free ports for etcd")
	return "", etcdFiles{}
}

// externalEtcdArgs are the command line of an apiserver on free ports that uses the etcd at
// url with files.
func externalEtcdArgs(t *testing.T, url string, files etcdFiles) []string {
	return []string{"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--secure-port", "0", "--shutdown-delay", "0s",
		"--etcd-servers", url, "--etcd-cafile", files.ca, "--etcd-certfile", files.cert, "--etcd-keyfile", files.key}
}

// TestExternalEtcdUnreachable starts the program against a real TLS-only etcd it cannot
// talk to: a CA that did not sign etcd's certificate, a client certificate etcd does not
// trust, plain HTTP. Each start fails (exit 1, as kube-apiserver's) after the bounded wait,
// having logged the cause while it retried, with an error that names the endpoint and the
// real cause, where kube-apiserver says "etcd grpc connection not ready: context deadline
// exceeded".
func TestExternalEtcdUnreachable(t *testing.T) {
	url, files := startTLSEtcd(t)
	dir := t.TempDir()
	other := testpki.NewCA(t, "other-ca")
	otherCert, otherKey := other.Client(t, "apiserver-etcd-client")
	wrongCA := files
	wrongCA.ca = testpki.WriteFile(t, dir, "other-ca.crt", other.PEM)
	untrusted := files
	untrusted.cert, untrusted.key = testpki.WriteFile(t, dir, "other.crt", otherCert), testpki.WriteFile(t, dir, "other.key", otherKey)
	plain := "http://" + strings.TrimPrefix(url, "https://")

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"CA that did not sign etcd's certificate", externalEtcdArgs(t, url, wrongCA), []string{
			url + ": transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority",
			"is --etcd-cafile the CA that signed etcd's serving certificate"}},
		{"client certificate etcd does not trust", externalEtcdArgs(t, url, untrusted), []string{
			url + ": ", "remote error: tls: ", "etcd refused the client certificate"}},
		{"plain HTTP to a TLS-only etcd", []string{"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--secure-port", "0", "--etcd-servers", plain}, []string{
			plain + ": ", "server preface", "if it serves TLS, use https://"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := apiserver(t, tc.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, out)
			}
			want := append([]string{"\napiserver: no etcd server reachable after 20s: ", "etcd not reachable yet, retrying"}, tc.want...)
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestExternalEtcdReachable starts the program against the same kind of etcd with the right
// files: it serves, and SIGTERM stops it cleanly.
func TestExternalEtcdReachable(t *testing.T) {
	url, files := startTLSEtcd(t)
	cmd, _, logs := startServing(t, externalEtcdArgs(t, url, files)...)
	if strings.Contains(logs, "etcd not reachable") {
		t.Errorf("logged etcd as unreachable:\n%s", logs)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestExternalEtcdConfig checks what is wrong with --etcd-servers and its TLS files before
// anything starts: exit 2 and the flag (or the file, line and key) named, where
// kube-apiserver fails with exit 1 at start ("error creating storage factory: open ...") or,
// for a bad scheme, after its 20 s wait.
func TestExternalEtcdConfig(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "etcd-ca")
	cert, _ := ca.Client(t, "apiserver-etcd-client")
	_, otherKey := ca.Client(t, "other")
	caFile := testpki.WriteFile(t, dir, "ca.crt", ca.PEM)
	certFile := testpki.WriteFile(t, dir, "client.crt", cert)
	otherKeyFile := testpki.WriteFile(t, dir, "other.key", otherKey)
	notPEM := testpki.WriteFile(t, dir, "not.pem", []byte("not a certificate\n"))
	missing := filepath.Join(dir, "missing.crt")
	yamlFile := testpki.WriteFile(t, dir, "apiserver.yaml", []byte("etcd-servers: [https://127.0.0.1:2379]\netcd-cafile: "+missing+"\n"))
	const ep = "https://127.0.0.1:2379"

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing CA file", []string{"--etcd-servers", ep, "--etcd-cafile", missing}, "apiserver: flag --etcd-cafile: cannot read " + missing + ": no such file or directory\n"},
		{"missing CA file names file and line", []string{"--config", yamlFile}, "apiserver: " + yamlFile + ":2: etcd-cafile: cannot read " + missing + ": no such file or directory\n"},
		{"CA file not PEM", []string{"--etcd-servers", ep, "--etcd-cafile", notPEM}, "apiserver: flag --etcd-cafile: " + notPEM + " holds no PEM certificate\n"},
		{"certificate without key", []string{"--etcd-servers", ep, "--etcd-certfile", certFile}, "apiserver: flag --etcd-certfile: etcd-certfile and etcd-keyfile go together\n"},
		{"key of another certificate", []string{"--etcd-servers", ep, "--etcd-certfile", certFile, "--etcd-keyfile", otherKeyFile},
			"apiserver: flag --etcd-certfile: " + certFile + " and " + otherKeyFile + " (etcd-keyfile): private key does not match public key\n"},
		{"unknown scheme", []string{"--etcd-servers", "ftp://127.0.0.1:2379"}, "apiserver: flag --etcd-servers: \"ftp://127.0.0.1:2379\": scheme \"ftp\" is not one of http, https, unix, unixs\n"},
		{"no scheme", []string{"--etcd-servers", "127.0.0.1:2379"}, "apiserver: flag --etcd-servers: \"127.0.0.1:2379\" is not a URL (want https://host:port, or http://, unix://, unixs://)\n"},
		{"TLS files with a plain URL", []string{"--etcd-servers", "http://127.0.0.1:2379", "--etcd-cafile", caFile},
			"apiserver: flag --etcd-servers: \"http://127.0.0.1:2379\" is plain (no TLS) but etcd-cafile, etcd-certfile or etcd-keyfile is given, which only https:// and unixs:// use: use https://\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := apiserver(t, append(tc.args, "--data-dir", t.TempDir())...)
			if code != 2 || out != tc.want {
				t.Errorf("exit %d, output %q; want exit 2, %q", code, out, tc.want)
			}
		})
	}
}
