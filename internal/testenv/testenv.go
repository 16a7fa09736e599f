// Package testenv decides what a test does when a prerequisite (root, a command, a kernel
// feature) is missing: skip it on a developer's machine, fail it in CI (CI=true), so that no
// suite silently skips where it must run.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// CI reports whether the tests run in CI, where missing prerequisites are failures.
func CI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && v != "false"
}

// Require fails (in CI) or skips the test unless ok; what says what is missing.
func Require(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if CI() {
		t.Fatalf("prerequisite missing in CI: %s", what)
	}
	t.Skipf("prerequisite missing: %s", what)
}

// RequireRoot requires an effective uid of 0 (network namespaces, raw sockets).
func RequireRoot(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "must run as root")
}

// RequireCommand requires each named program on PATH.
func RequireCommand(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := exec.LookPath(n)
		Require(t, err == nil, "command "+n+" not on PATH")
	}
}

// SilentListener accepts every connection on a loopback port and never answers: a peer
// that is up but dead, for timeout and goroutine tests.
type SilentListener struct {
	net.Listener
	mu       sync.Mutex
	accepted []net.Conn
}

// Accepted reports how many connections it has taken.
func (l *SilentListener) Accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.accepted)
}

// NewSilentListener starts a SilentListener, which closes itself and every connection it
// took when the test ends.
func NewSilentListener(t testing.TB) *SilentListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &SilentListener{Listener: ln}
	var held sync.WaitGroup
	held.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.accepted = append(l.accepted, c)
			l.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		held.Wait()
		l.mu.Lock()
		for _, c := range l.accepted {
			c.Close()
		}
		l.mu.Unlock()
	})
	return l
}
