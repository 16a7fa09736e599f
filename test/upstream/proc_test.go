package upstream_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// proc is an upstream program the test started, with its output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	exitErr error
}

// startProc runs bin with args, its output in dir/name.log. The test's cleanup kills it (by
// its PID) if the test did not stop it, and prints the log's tail when the test failed.
func startProc(t *testing.T, dir, name, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { p.exitErr = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s log tail:\n%s", name, p.tail(6000))
		}
		// HACP_ARTIFACTS keeps every log past the test's temporary directory.
		if dst := os.Getenv("HACP_ARTIFACTS"); dst != "" {
			if b, err := os.ReadFile(logPath); err == nil && os.MkdirAll(dst, 0o755) == nil {
				_ = os.WriteFile(filepath.Join(dst, name+".log"), b, 0o644)
			}
		}
	})
	return p
}

// running reports whether the program has not exited.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop ends the program with SIGTERM, as systemd would, and waits for it (SIGKILL after 30 s).
func (p *proc) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

func (p *proc) kill() {
	if p.running() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) tail(n int) []byte {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
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
