package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Fatalf and Skipf record the message and stop the call.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(r)
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	panic(r)
}

// call runs f with a recorder and returns what f returned, or the recorder's messages.
func call(t *testing.T, f func(testing.TB) string) (out string, r *recorder) {
	r = &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	return f(r), r
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string, mode os.FileMode) string {
	p := filepath.Join(t.TempDir(), "kubectl")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKubectl(t *testing.T) {
	exe := script(t, "true", 0o755)
	tests := []struct {
		name, env, path, ci string
		want, fatal, skip   string
	}{
		{name: "HACP_KUBECTL", env: exe, want: exe},
		{name: "HACP_KUBECTL over PATH", env: exe, path: filepath.Dir(script(t, "true", 0o755)), want: exe},
		{name: "PATH", path: filepath.Dir(exe), want: exe},
		{name: "relative", env: "bin/kubectl", fatal: "want the absolute path"},
		{name: "missing", env: "/nonexistent/kubectl", fatal: "no such file"},
		{name: "not executable", env: script(t, "true", 0o644), fatal: "not an executable file"},
		{name: "a directory", env: t.TempDir(), fatal: "not an executable file"},
		{name: "none on PATH", path: t.TempDir(), skip: "kubectl not on PATH"},
		{name: "none on PATH in CI", path: t.TempDir(), ci: "true", fatal: "prerequisite missing in CI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(KubectlEnv, tt.env)
			t.Setenv("PATH", tt.path)
			t.Setenv("CI", tt.ci)
			got, r := call(t, func(tb testing.TB) string { return Kubectl(tb) })
			if got != tt.want || !strings.Contains(r.fatal, tt.fatal) || (tt.fatal == "") != (r.fatal == "") ||
				!strings.Contains(r.skip, tt.skip) || (tt.skip == "") != (r.skip == "") {
				t.Fatalf("Kubectl = %q, fatal %q, skip %q; want %q, fatal %q, skip %q", got, r.fatal, r.skip, tt.want, tt.fatal, tt.skip)
			}
		})
	}
}

func TestKubectlMinor(t *testing.T) {
	tests := []struct {
		name, gitVersion string
		minor            int
		dispatcher       bool
		fatal            string
	}{
		{name: "release", gitVersion: "v1.36.3", minor: 36},
		{name: "gcloud dispatcher", gitVersion: "v1.32.4-dispatcher", minor: 32, dispatcher: true},
		{name: "unstamped", gitVersion: "v0.0.0-master+$Format:%H$", fatal: "no release in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := script(t, `echo '{"clientVersion": {"gitVersion": "`+tt.gitVersion+`"}}'`, 0o755)
			var dispatcher bool
			got, r := call(t, func(tb testing.TB) string {
				minor, d := KubectlMinor(tb, bin)
				dispatcher = d
				return fmt.Sprint(minor)
			})
			if tt.fatal != "" {
				if !strings.Contains(r.fatal, tt.fatal) {
					t.Fatalf("KubectlMinor: fatal %q, want %q", r.fatal, tt.fatal)
				}
				return
			}
			if got != fmt.Sprint(tt.minor) || dispatcher != tt.dispatcher || r.fatal != "" {
				t.Fatalf("KubectlMinor = %s, %v (fatal %q); want %d, %v", got, dispatcher, r.fatal, tt.minor, tt.dispatcher)
			}
		})
	}
}
