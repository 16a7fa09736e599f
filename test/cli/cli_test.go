// Package cli tests the three programs as a user meets them: built binaries, --help,
// --version, the example configs, and bad configs rejected with file, line and key (exit 2)
// before anything starts.
package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/certs"
)

var programs = []string{"apiserver", "vipd", "lbproxy"}

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hacp-cli-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	args := []string{"build", "-o", dir + "/"}
	for _, p := range programs {
		args = append(args, "github.com/hacp/hacp/cmd/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs a program and returns its combined output and exit code.
func run(t *testing.T, prog string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(binDir, prog), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	default:
		t.Fatalf("%s: %v", prog, err)
		return "", -1
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, p := range programs {
		t.Run(p, func(t *testing.T) {
			out, code := run(t, p, "--help")
			if code != 0 {
				t.Fatalf("--help exit %d: %s", code, out)
			}
			for _, want := range []string{"Usage: " + p, "\n  --config file\n", "\n  --version\n", "\n  --check-config\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("--help output lacks %q:\n%s", want, out)
				}
			}
			out, code = run(t, p, "--version")
			if code != 0 || !strings.HasPrefix(out, p+" ") {
				t.Errorf("--version: exit %d, output %q", code, out)
			}
		})
	}
}

// TestBadFlag: a bad flag is one line naming it, with the nearest flag when there is one.
func TestBadFlag(t *testing.T) {
	for _, p := range programs {
		t.Run(p, func(t *testing.T) {
			out, code := run(t, p, "--no-such-flag")
			if want := p + ": flag --no-such-flag: unknown flag; see --help\n"; code != 2 || out != want {
				t.Errorf("exit %d, output %q; want exit 2, %q", code, out, want)
			}
			out, code = run(t, p, "--log-levle", "debug")
			if want := p + ": flag --log-levle: unknown flag (did you mean --log-level?); see --help\n"; code != 2 || out != want {
				t.Errorf("exit %d, output %q; want exit 2, %q", code, out, want)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		prog, body, want string
	}{
		{"vipd", "# vipd\npriority: 101\nprioirty: 100\n", ":3: prioirty: unknown key"},
		{"lbproxy", "listen: \":8443\"\n\nbakend: [\"127.0.0.1:6443\"]\n", ":3: bakend: unknown key"},
		{"apiserver", "secure-port: 6443\nsecure-prot: 6444\n", ":2: secure-prot: unknown key"},
		{"vipd", "priority: 300\n", ":1: priority:"},
		{"lbproxy", "connect-timeout: fast\n", ":1: connect-timeout:"},
		{"apiserver", "secure-port: 99999\n", ":1: secure-port:"},
	}
	for i, tt := range tests {
		t.Run(tt.prog+"/"+strings.TrimSpace(tt.want), func(t *testing.T) {
			path := filepath.Join(dir, tt.prog+string(rune('a'+i))+".yaml")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := run(t, tt.prog, "--config", path)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; output:\n%s", code, out)
			}
			if !strings.Contains(out, path+tt.want) {
				t.Fatalf("output does not name %q:\n%s", path+tt.want, out)
			}
		})
	}
}

func TestExampleConfigsLoad(t *testing.T) {
	// The lbproxy example names the cluster CA at its installed path; this machine has none,
	// so point the flag at a freshly made one (flags override the file).
	pki, err := certs.Ensure(t.TempDir(), certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// --check-config also checks that vipd's interface exists on this host: the example's
	// eth0 may not, so point it at lo.
	extra := map[string][]string{"lbproxy": {"--check-ca", pki.CACert}, "vipd": {"--iface", "lo"}}
	for _, p := range programs {
		t.Run(p, func(t *testing.T) {
			path := filepath.Join("..", "..", "configs", p+".yaml")
			args := append([]string{"--config", path, "--check-config"}, extra[p]...)
			out, code := run(t, p, args...)
			if code != 0 || !strings.Contains(out, "is valid") {
				t.Fatalf("configs/%s.yaml: exit %d:\n%s", p, code, out)
			}
		})
	}
}
