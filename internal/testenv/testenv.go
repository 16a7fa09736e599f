// Package testenv decides what a test does when a prerequisite (root, a command, a kernel
// feature) is missing: skip it on a developer's machine, fail it in CI (CI=true), so that no
// suite silently skips where it must run.
package testenv

import (
	"os"
	"os/exec"
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
