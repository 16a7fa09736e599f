package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/certs"
)

func runHacpctl(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

func TestUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hacpctl.yaml")
	if err := os.WriteFile(file, []byte("masters:\n  - name: m1\n    apiserver: https://127.0.0.1:6443\n    vipdd: http://127.0.0.1:9901\ntimeout: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // part of stdout
		stderr string // the whole of stderr, when set
	}{
		{"help", []string{"--help"}, 0, "certs renew", ""},
		{"status help", []string{"status", "--help"}, 0, "--cert-warn duration", ""},
		{"certs check help", []string{"certs", "check", "--help"}, 0, "--warn duration", ""},
		{"version", []string{"--version"}, 0, "hacpctl ", ""},
		{"no command", nil, 2, "", ""},
		{"unknown command", []string{"stauts"}, 2, "", "hacpctl: unknown command \"stauts\"; see --help\n"},
		{"certs without verb", []string{"certs"}, 2, "", "hacpctl certs: want 'certs check' or 'certs renew'; see --help\n"},
		{"unknown flag", []string{"status", "--timout", "1s"}, 2, "", "hacpctl status: flag --timout: unknown flag (did you mean --timeout?); see --help\n"},
		{"bad duration", []string{"certs", "check", "--warn", "30"}, 2, "", "hacpctl certs check: flag --warn: invalid value \"30\": a duration needs a unit, e.g. 30s\n"},
		{"bad output", []string{"status", "--config", file, "-o", "yaml"}, 2, "", ""},
		{"unknown key", []string{"status", "--config", file}, 2, "", "hacpctl status: " + file + ":4: vipdd: unknown key (did you mean \"vipd\"?)\n"},
		{"missing file", []string{"status", "--config", file + ".gone"}, 2, "", "hacpctl status: " + file + ".gone: cannot read config: no such file or directory\n"},
		{"argument", []string{"certs", "check", "extra"}, 2, "", "hacpctl certs check: unexpected argument \"extra\"; see --help\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runHacpctl(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if tc.stderr != "" && stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", stderr, tc.stderr)
			}
			if code == 2 && strings.Count(stderr, "\n") > 1 && tc.args != nil {
				t.Errorf("a usage error is one line, got %q", stderr)
			}
		})
	}
}

func TestCertsCommands(t *testing.T) {
	dir := t.TempDir()
	if _, err := certs.Ensure(dir, certs.Options{Hosts: []string{"10.77.0.1"}}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runHacpctl("certs", "check", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, filepath.Join(dir, certs.ServingCertFile)) {
		t.Fatalf("certs check: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	_, stderr, code = runHacpctl("certs", "check", "--dir", dir, "--warn", "9000h")
	if code != 1 || !strings.Contains(stderr, "within 9000h0m0s") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("certs check --warn 9000h: exit %d, stderr %q; want 1 and one line", code, stderr)
	}
	stdout, stderr, code = runHacpctl("certs", "renew", "--dir", dir, "--valid-for", "10000h")
	if code != 0 || !strings.Contains(stdout, "renewed, valid until") {
		t.Fatalf("certs renew: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	// The leaves are valid 10000 h now; the CAs, not renewed, still 10 years.
	if _, stderr, code = runHacpctl("certs", "check", "--dir", dir, "--warn", "9000h"); code != 0 {
		t.Fatalf("after renew --valid-for 10000h, certs check --warn 9000h: exit %d, %q", code, stderr)
	}
	if _, stderr, code = runHacpctl("certs", "check", "--dir", filepath.Join(dir, "none")); code != 1 || !strings.Contains(stderr, "no certificate files") {
		t.Fatalf("empty directory: exit %d, %q", code, stderr)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	stdout, stderr, code := runHacpctl("status", "--config", "../../configs/hacpctl.yaml", "--check-config")
	if code != 0 || !strings.Contains(stdout, "is valid") {
		t.Fatalf("configs/hacpctl.yaml: exit %d: %s%s", code, stdout, stderr)
	}
}
