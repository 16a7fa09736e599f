package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/testpki"
)

// TestCommandLine runs the program on bad command lines and --help and checks the whole
// output: a bad flag is one line and exit 2, --help lists flags as --flag and exits 0.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "etcd-peer-ca")
	certPEM, _ := ca.Serving(t, "m1")
	_, otherKeyPEM := ca.Serving(t, "m2")
	cert := testpki.WriteFile(t, dir, "peer.crt", certPEM)
	otherKey := testpki.WriteFile(t, dir, "other.key", otherKeyPEM)
	missing := filepath.Join(dir, "missing.crt")

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, 2, "apiserver: flag --no-such-flag: unknown flag; see --help\n"},
		{"misspelt flag", []string{"--secure-prot", "6443"}, 2, "apiserver: flag --secure-prot: unknown flag (did you mean --secure-port?); see --help\n"},
		{"misspelt flag with one dash and a value", []string{"-data-dri=/tmp/x"}, 2, "apiserver: flag --data-dri: unknown flag (did you mean --data-dir?); see --help\n"},
		{"duration without a unit", []string{"--shutdown-delay", "2"}, 2, "apiserver: flag --shutdown-delay: invalid value \"2\": a duration needs a unit, e.g. 2s\n"},
		{"flag without its value", []string{"--data-dir"}, 2, "apiserver: flag --data-dir: needs a value; see --help\n"},
		{"peer certificate of another key", []string{"--etcd-peer-cert-file", cert, "--etcd-peer-key-file", otherKey, "--check-config"}, 2,
			"apiserver: flag --etcd-peer-cert-file: " + cert + " and " + otherKey + " (etcd-peer-key-file): private key does not match public key\n"},
		{"unreadable peer CA", []string{"--etcd-peer-trusted-ca-file", missing, "--check-config"}, 2,
			"apiserver: flag --etcd-peer-trusted-ca-file: cannot read " + missing + ": no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := apiserver(t, tt.args...)
			if code != tt.code || out != tt.want {
				t.Errorf("exit %d, output %q; want exit %d, %q", code, out, tt.code, tt.want)
			}
		})
	}

	for _, help := range []string{"--help", "-help", "-h"} {
		code, out := apiserver(t, help)
		if code != 0 {
			t.Errorf("%s: exit %d, want 0", help, code)
		}
		for _, want := range []string{"Usage: apiserver [flags]\n\napiserver serves the Kubernetes API", "kubectl api-resources lists",
			"\n  --secure-port port\n    \tHTTPS port (0 picks a free one) (default 6443)\n", "\n  --check-config\n", "\n  --shutdown-delay duration\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output does not contain %q", help, want)
			}
		}
		if strings.Contains(out, "\n  -s") || strings.Contains(out, "\n  -c") {
			t.Errorf("%s: help writes a flag with one dash", help)
		}
	}
}
