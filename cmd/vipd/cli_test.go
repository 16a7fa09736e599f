package main

import (
	"bytes"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// vipd runs the program to completion (the test binary with VIPD_TEST_MAIN=1) and returns
// its exit code and output.
func vipd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "VIPD_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestCheckConfig checks that --check-config looks at the host (interfaces, files,
// commands) without starting, and the whole output of bad command lines: one line, exit 2.
func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	file := filepath.Join(dir, "vipd.yaml")
	if err := os.WriteFile(file, []byte("vip: [10.77.0.100/24]\ninstances:\n  - name: a\n    vrid: 1\n  - name: b\n    vrid: 2\n    iface: nosuch1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vrrp := []string{"--vip", "10.77.0.100/24", "--check-config"}
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	packaged := "../../deploy/packages/config/vipd.yaml" // the hacp-vipd package's /etc/hacp/vipd.yaml
	bgp := []string{"--mode", "bgp", "--vip", "10.77.0.100/32", "--bgp-as", "65100", "--bgp-peer", "10.77.0.1:65000", "--check-config"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"interface exists", append([]string{"--iface", "lo"}, vrrp...), 0, "vipd: configuration (flags) is valid\n"},
		{"packaged default config", []string{"--config", packaged, "--iface", "lo", "--check-ca-file", ca, "--check-config"}, 0, "vipd: configuration (" + packaged + " and flags) is valid\n"},
		{"missing interface", append([]string{"--iface", "nosuch0"}, vrrp...), 2, "vipd: flag --iface: interface \"nosuch0\" does not exist on this host\n"},
		{"missing interface of an instance in a file", []string{"--config", file, "--iface", "lo", "--check-config"}, 2,
			"vipd: " + file + ":7: instances.1.iface: interface \"nosuch1\" does not exist on this host\n"},
		{"missing tracked interface", append([]string{"--iface", "lo", "--track-iface", "nosuch2"}, vrrp...), 2, "vipd: flag --track-iface: interface \"nosuch2\" does not exist on this host\n"},
		{"unreadable CA file", append([]string{"--iface", "lo", "--check-ca-file", missing}, vrrp...), 2, "vipd: flag --check-ca-file: cannot read " + missing + ": no such file or directory\n"},
		{"notify command missing", append([]string{"--iface", "lo", "--notify", missing + " arg"}, vrrp...), 2, "vipd: flag --notify: cannot run " + missing + ": no such file or directory\n"},
		{"BGP interface missing", append([]string{"--bgp-iface", "nosuch3"}, bgp...), 2, "vipd: flag --bgp-iface: interface \"nosuch3\" does not exist on this host\n"},
		{"unreadable kubeconfig", append([]string{"--bgp-announce", "leader", "--kubeconfig", missing}, bgp...), 2, "vipd: flag --kubeconfig: cannot read " + missing + ": no such file or directory\n"},
		{"unknown flag", []string{"--no-such-flag"}, 2, "vipd: flag --no-such-flag: unknown flag; see --help\n"},
		{"misspelt flag", []string{"--prority", "100"}, 2, "vipd: flag --prority: unknown flag (did you mean --priority?); see --help\n"},
		{"duration without a unit", []string{"--check-interval", "2"}, 2, "vipd: flag --check-interval: invalid value \"2\": a duration needs a unit, e.g. 2s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := vipd(t, tt.args...)
			if code != tt.code || out != tt.want {
				t.Errorf("exit %d, output %q; want exit %d, %q", code, out, tt.code, tt.want)
			}
		})
	}
}
