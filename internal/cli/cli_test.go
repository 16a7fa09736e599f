package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/config"
)

type testConfig struct {
	Name     string        `yaml:"name"`
	Interval time.Duration `yaml:"interval"`
	LogLevel string        `yaml:"log-level"`
}

func (c *testConfig) Validate() error {
	if c.Name == "" {
		return config.FieldErrorf("name", "must not be empty")
	}
	return nil
}

// testDaemon does what its name says to: "start-fails", "run-fails", "config-fails";
// "hup" waits for one reload, then signals SIGTERM to itself and returns when stopped.
type testDaemon struct {
	name     string
	reloaded chan string
}

func (d *testDaemon) Start(context.Context) error {
	if d.name == "start-fails" {
		return errors.New("listen: address already in use")
	}
	return nil
}

func (d *testDaemon) Run(ctx context.Context) error {
	switch d.name {
	case "run-fails":
		return errors.New("etcd stopped")
	case "hup":
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			return err
		}
		<-d.reloaded
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		<-ctx.Done()
	}
	return nil
}

// syncBuffer is a strings.Builder safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testMain(stderr io.Writer) Main[testConfig, *testDaemon] {
	return Main[testConfig, *testDaemon]{
		Program: config.Program[testConfig]{
			Name:    "testd",
			Default: func() *testConfig { return &testConfig{Interval: time.Second, LogLevel: "info"} },
			Flags: func(fs *flag.FlagSet, c *testConfig) {
				fs.StringVar(&c.Name, "name", c.Name, "what the daemon does")
				fs.DurationVar(&c.Interval, "interval", c.Interval, "an interval")
				fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level")
			},
			Output: io.Discard,
		},
		LogLevel: func(c *testConfig) string { return c.LogLevel },
		New: func(c *testConfig, _ *slog.Logger) (*testDaemon, error) {
			if c.Name == "config-fails" {
				return nil, errors.New("vip: at least one virtual address is required")
			}
			return &testDaemon{name: c.Name, reloaded: make(chan string, 1)}, nil
		},
		Reload: func(d *testDaemon, c *testConfig, _ *slog.Logger) error {
			d.reloaded <- c.Name
			return nil
		},
		ReloadFailed: "reload failed",
		Stderr:       stderr,
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string // stderr, exactly (log lines: the part after "msg=")
	}{
		{"help", []string{"--help"}, 0, ""},
		{"help with one dash", []string{"-help"}, 0, ""},
		{"valid --check-config", []string{"--name", "x", "--check-config"}, 0, ""},
		{"unknown flag", []string{"--nmae", "x"}, 2, "testd: flag --nmae: unknown flag (did you mean --name?); see --help\n"},
		{"duration without a unit", []string{"--name", "x", "--interval", "2"}, 2, "testd: flag --interval: invalid value \"2\": a duration needs a unit, e.g. 2s\n"},
		{"invalid configuration", []string{"--check-config"}, 2, "testd: name: must not be empty\n"},
		{"New fails", []string{"--name", "config-fails"}, 2, "testd: vip: at least one virtual address is required\n"},
		{"Start fails", []string{"--name", "start-fails", "--log-level", "error"}, 1, "testd: listen: address already in use\n"},
		{"Run fails", []string{"--name", "run-fails", "--log-level", "error"}, 1, "testd: etcd stopped\n"},
		{"clean stop", []string{"--name", "stops"}, 0, "testd stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr syncBuffer
			code := testMain(&stderr).Run(tt.args)
			got := stderr.String()
			if strings.Contains(got, "msg=") {
				_, got, _ = strings.Cut(strings.TrimSpace(got), "msg=")
				got = strings.Trim(got, `"`)
			}
			if code != tt.code || got != tt.want {
				t.Errorf("exit %d, stderr %q; want exit %d, %q", code, got, tt.code, tt.want)
			}
		})
	}
}

// TestRunReloadsOnSIGHUPAndStopsOnSIGTERM: SIGHUP parses the command line again and hands
// the configuration to Reload; SIGTERM ends Run's context.
func TestRunReloadsOnSIGHUPAndStopsOnSIGTERM(t *testing.T) {
	var stderr syncBuffer
	if code := testMain(&stderr).Run([]string{"--name", "hup"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "msg=\"testd stopped\"") {
		t.Errorf("stderr does not log the stop:\n%s", stderr.String())
	}
}
