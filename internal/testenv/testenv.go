// Package testenv decides what a test does when a prerequisite (root, a command, a kernel
// feature) is missing: skip it on a developer's machine, fail it in CI (CI=true), so that no
// suite silently skips where it must run.
package testenv

import (
	"debug/buildinfo"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// KubectlEnv names the variable that chooses the kubectl the tests run: the absolute path of
// a kubectl binary (make test-kubectl sets it to each supported release in turn).
const KubectlEnv = "HACP_KUBECTL"

// Kubectl returns the kubectl every test that runs kubectl execs: $HACP_KUBECTL if set,
// else kubectl on PATH. A kubectl missing from PATH skips the test (fails it in CI); a
// HACP_KUBECTL that is not an absolute path of an executable file fails it everywhere,
// since a skip would hide that the chosen release never ran.
func Kubectl(t testing.TB) string {
	t.Helper()
	p := os.Getenv(KubectlEnv)
	if p == "" {
		path, err := exec.LookPath("kubectl")
		Require(t, err == nil, "command kubectl not on PATH (or set "+KubectlEnv+")")
		return path
	}
	if !filepath.IsAbs(p) {
		t.Fatalf("%s=%q: want the absolute path of a kubectl binary", KubectlEnv, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("%s: %v", KubectlEnv, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s=%q: not an executable file", KubectlEnv, p)
	}
	return p
}

// kubeRelease matches a Kubernetes release (v1.35.4, v1.32.4-dispatcher), capturing the minor.
var kubeRelease = regexp.MustCompile(`^v1\.(\d+)\.`)

// KubectlMinor returns the minor release of the kubectl at bin (35 for v1.35.4), for the
// few assertions on output that kubectl's releases print differently. It reads the
// k8s.io/kubernetes module bin was built from (internal/upstream's builds, stamped or not),
// else asks `kubectl version --client`. dispatcher reports the gcloud SDK's kubectl,
// which runs the installed release nearest the server's: its own minor says nothing then.
func KubectlMinor(t testing.TB, bin string) (minor int, dispatcher bool) {
	t.Helper()
	if info, err := buildinfo.ReadFile(bin); err == nil {
		for _, m := range append(info.Deps, &info.Main) {
			if sub := kubeRelease.FindStringSubmatch(m.Version); m.Path == "k8s.io/kubernetes" && sub != nil {
				minor, _ = strconv.Atoi(sub[1])
				return minor, false
			}
		}
	}
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version --client: %v", bin, err)
	}
	var v struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version --client: %v\n%s", bin, err, out)
	}
	sub := kubeRelease.FindStringSubmatch(v.ClientVersion.GitVersion)
	if sub == nil {
		t.Fatalf("%s version --client: no release in %q", bin, v.ClientVersion.GitVersion)
	}
	minor, _ = strconv.Atoi(sub[1])
	return minor, strings.HasSuffix(v.ClientVersion.GitVersion, "-dispatcher")
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
