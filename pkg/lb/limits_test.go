package lb

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOutOfFileDescriptors runs the proxy out of file descriptors: a new client waits in
// the listen backlog, the proxy says so once in its log and counts it, does not spin,
// keeps its sessions moving bytes, and serves the waiting client once a descriptor is
// free. It lowers the open-file limit, which is per process, so it runs
// itself again in a child process where no other test opens files meanwhile.
func TestOutOfFileDescriptors(t *testing.T) {
	if os.Getenv("LB_TEST_FD_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOutOfFileDescriptors$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "LB_TEST_FD_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestOutOfFileDescriptors")) {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}

	b := newNameBackend(t, "a")
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.CheckMode = "tcp"
	// One check brings the backend UP, and no other runs: its socket would take a
	// descriptor this test counts on. (pkg/health tests that a check failing for want of
	// a descriptor does not count against the backend.)
	cfg.Rise = 1
	cfg.CheckInterval = time.Hour
	cfg.CheckFastInterval = 50 * time.Millisecond
	cfg.CheckTimeout = 5 * time.Second
	cfg.ConnectTimeout = 10 * time.Second
	cfg.Backends = []string{b.ln.Addr().String()}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), nil))
	p, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitAllUp(t, p)

	var sessions []*idleClient
	for range 3 {
		c, err := openIdleClient(p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.c.Close() })
		sessions = append(sessions, c)
	}

	// Leave one descriptor: the client's socket takes it, the proxy's accept finds none.
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = uint64(lowestFreeFD(t) + 1)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	waiting := make(chan *idleClient, 1)
	dialErr := make(chan error, 1)
	go func() {
		c, err := openIdleClient(p.Addr())
		if err != nil {
			dialErr <- err
			return
		}
		waiting <- c
	}()
	waitFor(t, "an accept failed for want of a descriptor", 20*time.Second, func() bool { return p.Status().OutOfFiles > 0 })

	// The sessions it has keep working, on a backend that stays UP.
	for i, c := range sessions {
		if _, err := io.WriteString(c.c, "x"); err != nil {
			t.Fatalf("session %d: write: %v", i, err)
		}
		_ = c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if got, err := c.r.ReadByte(); err != nil || got != 'x' {
			t.Fatalf("session %d while out of descriptors: %q, %v", i, got, err)
		}
	}
	if st := backendState(p, b.ln.Addr().String()); st.State != "UP" {
		t.Fatalf("backend %s while out of descriptors; want UP", st.State)
	}
	failed := p.Status().OutOfFiles
	restore()
	select {
	case c := <-waiting:
		defer c.c.Close()
		if c.backend != "a" {
			t.Errorf("waiting client served by %q", c.backend)
		}
	case err := <-dialErr:
		t.Fatalf("waiting client: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("waiting client never served after descriptors were free")
	}

	out := logs.String()
	if n := strings.Count(out, `msg="out of file descriptors`); n != 1 {
		t.Errorf("%d log lines about running out of file descriptors, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "accepting again") {
		t.Errorf("no log line on accepting again:\n%s", out)
	}
	// Accepts back off: a busy loop would fail thousands of times in this time.
	if failed > 100 {
		t.Errorf("%d failed accepts while out of descriptors; want a backoff", failed)
	}
	t.Logf("%d failed accepts while out of descriptors", failed)
}

// lowestFreeFD returns the lowest descriptor number this process does not use, which the
// next socket gets.
func lowestFreeFD(t *testing.T) int {
	t.Helper()
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	return fd
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
