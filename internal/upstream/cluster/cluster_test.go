package main

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
)

// TestQuickStart follows the README's quick start: `make run-cluster` (this program over
// bin/apiserver with configs/apiserver.yaml, on spare ports), then kubectl with the admin
// kubeconfig creates a Deployment of two replicas, whose pods must become Running on kwok's
// nodes; Ctrl-C (SIGINT) then stops everything and the program exits 0.
func TestQuickStart(t *testing.T) {
	kubectlBin := testenv.Kubectl(t)
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", upstream.Kwok} {
		upstream.Binary(t, name) // skips on a developer's machine when it cannot be built, fails in CI
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/hacp/hacp/cmd/apiserver", "github.com/hacp/hacp/internal/upstream/cluster")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var c *cluster
	for attempt := 1; ; attempt++ {
		c = startCluster(t, dir, fmt.Sprintf("data-%d", attempt))
		if c.ready() {
			break
		}
		// A port picked free may be taken before the apiserver listens on it: try fresh ones.
		if attempt < 3 && c.logsContain("address already in use") {
			continue
		}
		t.Fatalf("cluster exited before it was ready: %v", c.wait())
	}

	kubectl := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlBin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.data, "admin.kubeconfig"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
	for deadline := time.Now().Add(3 * time.Minute); ; {
		phases := kubectl("get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.phase}{"\n"}{end}`)
		if strings.Count(phases, "Running") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 Running pods: not within 3m; phases:\n%s\n%s", phases, kubectl("get", "deploy,rs,pods", "-o", "wide"))
		}
		time.Sleep(500 * time.Millisecond) // poll
	}
	t.Logf("kubectl get pods:\n%s", kubectl("get", "pods", "-o", "wide"))

	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case c.err = <-c.done:
		c.exited = true
		if c.err != nil {
			t.Fatalf("cluster after Ctrl-C: %v", c.err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("cluster did not stop within 3 minutes of Ctrl-C")
	}
}

// cluster is one run of the program the test started.
type cluster struct {
	t       *testing.T
	data    string // its --data-dir
	cmd     *exec.Cmd
	done    chan error
	readyCh chan bool
	exited  bool  // done has been received from
	err     error // the exit, once exited
}

// startCluster runs the program built into dir with configs/apiserver.yaml and fresh ports,
// its data in dir/name. The test's cleanup stops it (SIGINT) unless it exited.
func startCluster(t *testing.T, dir, name string) *cluster {
	t.Helper()
	c := &cluster{t: t, data: filepath.Join(dir, name), done: make(chan error, 1), readyCh: make(chan bool, 1)}
	c.cmd = exec.Command(filepath.Join(dir, "cluster"),
		"--apiserver", filepath.Join(dir, "apiserver"),
		"--config", filepath.Join("..", "..", "..", "configs", "apiserver.yaml"),
		"--data-dir", c.data,
		"--controller-manager-port", freePort(t), "--scheduler-port", freePort(t),
		"--wait", "3m",
		"--", "--secure-port", freePort(t),
		"--etcd-listen-client-url", "https://127.0.0.1:"+freePort(t),
		"--etcd-listen-peer-urls", "http://127.0.0.1:"+freePort(t))
	c.cmd.Stderr = os.Stderr
	// Killed with the test binary should that die first; the program's own children follow it.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	go func() {
		sc := bufio.NewScanner(stdout)
		ready := false
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text()) // not t.Log: this goroutine may outlive the test by a line
			if strings.HasPrefix(sc.Text(), "cluster: ready") && !ready {
				ready = true
				c.readyCh <- true
			}
		}
		if !ready {
			c.readyCh <- false
		}
	}()
	t.Cleanup(func() {
		if !c.exited { // the test failed before Ctrl-C
			_ = c.cmd.Process.Signal(syscall.SIGINT)
			<-c.done
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(c.data, "cluster", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("%s (end):\n%s", filepath.Base(l), b)
			}
		}
	})
	return c
}

// ready waits for the program to report the cluster ready; false when it exited first.
func (c *cluster) ready() bool {
	select {
	case ok := <-c.readyCh:
		return ok
	case <-time.After(10 * time.Minute):
		c.t.Fatal("cluster not ready within 10 minutes")
		return false
	}
}

// wait returns the program's exit once it has exited.
func (c *cluster) wait() error {
	if !c.exited {
		c.err = <-c.done
		c.exited = true
	}
	return c.err
}

// logsContain reports whether a log of the program's children holds s; it waits for the
// program to exit first.
func (c *cluster) logsContain(s string) bool {
	_ = c.wait()
	logs, _ := filepath.Glob(filepath.Join(c.data, "cluster", "*.log"))
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// freePort returns a loopback TCP port nothing listens on right now, below the kernel's
// ephemeral range where it can (embedetcd.FreeLocalURL), so that no outgoing connection takes
// it before the program listens on it.
func freePort(t *testing.T) string {
	t.Helper()
	u, err := embedetcd.FreeLocalURL()
	if err != nil {
		t.Fatal(err)
	}
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Port()
}
