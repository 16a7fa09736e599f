package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/upstream"
)

// TestQuickStart follows the README's quick start: `make run-cluster` (this program over
// bin/apiserver with configs/apiserver.yaml, on spare ports), then kubectl with the admin
// kubeconfig creates a Deployment of two replicas, whose pods must become Running on kwok's
// nodes; Ctrl-C (SIGINT) then stops everything and the program exits 0.
func TestQuickStart(t *testing.T) {
	testenv.RequireCommand(t, "kubectl")
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", upstream.Kwok} {
		upstream.Binary(t, name) // skips on a developer's machine when it cannot be built, fails in CI
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/hacp/hacp/cmd/apiserver", "github.com/hacp/hacp/internal/upstream/cluster")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(filepath.Join(dir, "cluster"),
		"--apiserver", filepath.Join(dir, "apiserver"),
		"--config", filepath.Join("..", "..", "..", "configs", "apiserver.yaml"),
		"--data-dir", data,
		"--controller-manager-port", freePort(t), "--scheduler-port", freePort(t),
		"--wait", "3m",
		"--", "--secure-port", freePort(t),
		"--etcd-listen-client-url", "https://127.0.0.1:"+freePort(t),
		"--etcd-listen-peer-urls", "http://127.0.0.1:"+freePort(t))
	cmd.Stderr = os.Stderr
	// Killed with the test binary should that die first; the program's own children follow it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	t.Cleanup(func() {
		if !exited { // the test failed before Ctrl-C
			_ = cmd.Process.Signal(syscall.SIGINT)
			<-done
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(data, "cluster", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("%s (end):\n%s", filepath.Base(l), b)
			}
		}
	})

	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		r := false
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text()) // not t.Log: this goroutine may outlive the test by a line
			if strings.HasPrefix(sc.Text(), "cluster: ready") && !r {
				r = true
				ready <- true
			}
		}
		if !r {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			exited = true
			t.Fatalf("cluster exited before it was ready: %v", <-done)
		}
	case <-time.After(10 * time.Minute):
		t.Fatal("cluster not ready within 10 minutes")
	}

	kubectl := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, "kubectl", args...)
		c.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(data, "admin.kubeconfig"))
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
	var last string
	for deadline := time.Now().Add(3 * time.Minute); ; {
		last = kubectl("get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.phase}{"\n"}{end}`)
		if strings.Count(last, "Running") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 Running pods: not within 3m; phases:\n%s\n%s", last, kubectl("get", "deploy,rs,pods", "-o", "wide"))
		}
		time.Sleep(500 * time.Millisecond) // poll
	}
	t.Logf("kubectl get pods:\n%s", kubectl("get", "pods", "-o", "wide"))

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Fatalf("cluster after Ctrl-C: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("cluster did not stop within 3 minutes of Ctrl-C")
	}
}

// freePort returns a loopback TCP port nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
