package main

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/lb"
)

// The test binary doubles as lbproxy: with LBPROXY_TEST_MAIN=1 it runs main's run, so
// tests can start the real program (also inside network namespaces) without a build.
func TestMain(m *testing.M) {
	if os.Getenv("LBPROXY_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:]))
	}
	code := m.Run()
	if vipdBin != "" {
		os.RemoveAll(filepath.Dir(vipdBin)) // built by buildVipd
	}
	os.Exit(code)
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// lbproxy runs the program to completion and returns its exit code and output.
func lbproxy(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(self(t), args...)
	cmd.Env = append(os.Environ(), "LBPROXY_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("lbproxy %v did not exit: %s", args, out.String())
		return 0, ""
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	badBackend := writeFile(t, "bad.yaml", "listen: 127.0.0.1:0\nbackend:\n  - 10.0.0.11:6443\n  - 10.0.0.12\n")
	notPEM := writeFile(t, "ca.pem", "not a certificate\n")
	typo := writeFile(t, "typo.yaml", "backend: [127.0.0.1:1]\nconect-timeout: 1s\n")
	badPeer := writeFile(t, "peer.yaml", "backend: [127.0.0.1:1]\nsync-listen: 127.0.0.1:8444\nsync-peer:\n  - 10.0.0.12:8444\n  - master3:8444\n")

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no backends", []string{"--listen", "127.0.0.1:0"}, 2, "backend: no backends"},
		{"unparsable backend flag", []string{"--backend", "master1"}, 2, `flag --backend: backend "master1": want host:port`},
		{"unparsable backend in file", []string{"--config", badBackend}, 2, badBackend + `:4: backend.1: backend "10.0.0.12": want host:port`},
		{"bad weight", []string{"--backend", "127.0.0.1:1 weight=0"}, 2, "weight must be 1-256"},
		{"unknown key", []string{"--config", typo}, 2, typo + `:2: conect-timeout: unknown key (did you mean "connect-timeout"?)`},
		{"unreadable CA", []string{"--backend", "127.0.0.1:1", "--check-ca", "/nonexistent/ca.pem"}, 2, "flag --check-ca: cannot read CA file: no such file or directory"},
		{"CA without PEM", []string{"--backend", "127.0.0.1:1", "--check-ca", notPEM}, 2, "holds no PEM certificate"},
		{"bad balance", []string{"--backend", "127.0.0.1:1", "--balance", "random"}, 2, "flag --balance: want roundrobin or leastconn"},
		{"negative timeout", []string{"--backend", "127.0.0.1:1", "--connect-timeout", "-1s"}, 2, "flag --connect-timeout: must be positive"},
		{"sync peer by name in file", []string{"--config", badPeer}, 2, badPeer + `:5: sync-peer.1: want ip:port (an address, not a name`},
		{"sync peer without listen", []string{"--backend", "127.0.0.1:1", "--sync-peer", "10.0.0.12:8444"}, 2, "flag --sync-peer: sync-listen is not set"},
		{"sync listen without peers", []string{"--backend", "127.0.0.1:1", "--sync-listen", "127.0.0.1:8444"}, 2, "sync-peer: sync-listen is set but no sync-peer is"},
		{"sync heartbeat above interval", []string{"--backend", "127.0.0.1:1", "--sync-heartbeat", "2s"}, 2, "flag --sync-heartbeat: must not be longer than sync-interval"},
		{"port in use", []string{"--backend", "127.0.0.1:1", "--listen", busy.Addr().String()}, 1, "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := lbproxy(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit %d and %q", code, out, tt.code, tt.want)
			}
		})
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	code, out := lbproxy(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, f := range []string{"listen", "backend", "balance", "check-mode", "check-path", "check-ca", "check-insecure",
		"check-server-name", "check-interval", "check-fast-interval", "check-timeout", "rise", "fall", "connect-timeout",
		"retries", "client-idle-timeout", "server-idle-timeout", "tcp-user-timeout", "tcp-keepalive", "maxconn",
		"backend-maxconn", "max-queue", "queue-timeout", "slow-start", "drain-timeout", "status-addr", "log-level", "config",
		"sync-listen", "sync-peer", "sync-interval", "sync-heartbeat"} {
		if !strings.Contains(out, "  --"+f+" ") && !strings.Contains(out, "  --"+f+"\n") {
			t.Errorf("--help does not explain --%s", f)
		}
	}
}

// parseWithCA parses the config file with the CA path pointed at a real file.
func parseWithCA(t *testing.T, file string) *lb.Config {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	ca := writeFile(t, "ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	program.Output = io.Discard
	cfg, err := program.Parse([]string{"--config", file, "--check-ca", ca})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestExampleConfig loads configs/lbproxy.yaml.
func TestExampleConfig(t *testing.T) {
	cfg := parseWithCA(t, "../../configs/lbproxy.yaml")
	specs, err := cfg.BackendSpecs()
	if err != nil || len(specs) != 3 {
		t.Fatalf("backends %v, %v; want three masters", specs, err)
	}
	if cfg.ConnectTimeout >= time.Second || cfg.CheckMode != "https" || cfg.CheckPath != "/healthz" {
		t.Errorf("example config: %+v", cfg)
	}
	if _, err := lb.New(cfg, nil); err != nil {
		t.Fatal(err)
	}
}

// TestPackagedConfig loads the hacp-lbproxy package's /etc/hacp/lbproxy.yaml.
func TestPackagedConfig(t *testing.T) {
	if _, err := lb.New(parseWithCA(t, "../../deploy/packages/config/lbproxy.yaml"), nil); err != nil {
		t.Fatal(err)
	}
}

// TestSIGHUPReload starts the program with one backend, rewrites its config file to list
// two, and sends SIGHUP: the new backend comes UP and an established stream survives.
func TestSIGHUPReload(t *testing.T) {
	streamer := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, name)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		t.Cleanup(func() {
			s.CloseClientConnections()
			s.Close()
		})
		return s
	}
	a, b := streamer("a"), streamer("b")
	addrOf := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	listen := freePort(t)
	status := freePort(t)
	file := writeFile(t, "lbproxy.yaml", fmt.Sprintf("listen: %s\nstatus-addr: %s\ncheck-mode: http\ncheck-interval: 100ms\nbackend:\n  - %s\n", listen, status, addrOf(a)))

	cmd := exec.Command(self(t), "--config", file)
	cmd.Env = append(os.Environ(), "LBPROXY_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("lbproxy output:\n%s", out.String())
		}
	})
	waitStatus(t, status, func(st lb.Status) bool { return len(st.Backends) == 1 && st.Backends[0].State == "UP" })

	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Read(make([]byte, 512)); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(file, fmt.Appendf(nil, "listen: %s\nstatus-addr: %s\ncheck-mode: http\ncheck-interval: 100ms\nbackend:\n  - %s\n  - %s\n", listen, status, addrOf(a), addrOf(b)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(sysHUP); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, status, func(st lb.Status) bool {
		return len(st.Backends) == 2 && st.Backends[0].State == "UP" && st.Backends[1].State == "UP" && st.Backends[0].ActiveConns == 1
	})
	// The stream to a is still open: no EOF within a short read.
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("established stream after reload: %v, want still open", err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
