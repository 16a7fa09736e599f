package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type peer struct {
	Addr   string `yaml:"addr"`
	Weight int    `yaml:"weight"`
}

type testConfig struct {
	Priority int           `yaml:"priority"`
	Iface    string        `yaml:"iface"`
	Interval time.Duration `yaml:"interval"`
	Peers    []string      `yaml:"peer"`
	Backends []peer        `yaml:"backends"`
}

func (c *testConfig) Validate() error {
	var errs []error
	if c.Priority < 1 || c.Priority > 255 {
		errs = append(errs, FieldErrorf("priority", "must be 1-255, got %d", c.Priority))
	}
	for i, b := range c.Backends {
		if b.Weight < 0 {
			errs = append(errs, FieldErrorf("backends."+itoa(i)+".weight", "must not be negative"))
		}
	}
	return errors.Join(errs...)
}

func itoa(i int) string { return string(rune('0' + i)) }

var testProgram = Program[testConfig]{
	Name:    "testd",
	Version: "v0.0.1",
	Default: func() *testConfig { return &testConfig{Priority: 100, Iface: "eth0", Interval: time.Second} },
	Flags: func(fs *flag.FlagSet, c *testConfig) {
		fs.IntVar(&c.Priority, "priority", c.Priority, "priority")
		fs.StringVar(&c.Iface, "iface", c.Iface, "interface")
		fs.DurationVar(&c.Interval, "interval", c.Interval, "interval")
		StringList(fs, &c.Peers, "peer", "peer (repeatable)")
	},
	Output: io.Discard,
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseMerge(t *testing.T) {
	file := writeFile(t, "priority: 50\ninterval: 100ms\npeer: [a, b]\nbackends:\n  - addr: x:1\n    weight: 2\n")
	tests := []struct {
		name string
		args []string
		want testConfig
	}{
		{"defaults", nil, testConfig{Priority: 100, Iface: "eth0", Interval: time.Second}},
		{"file", []string{"--config", file}, testConfig{Priority: 50, Iface: "eth0", Interval: 100 * time.Millisecond, Peers: []string{"a", "b"}, Backends: []peer{{"x:1", 2}}}},
		{"flag overrides file", []string{"--config", file, "--priority", "7", "--peer", "c", "--peer", "d,e"}, testConfig{Priority: 7, Iface: "eth0", Interval: 100 * time.Millisecond, Peers: []string{"c", "d", "e"}, Backends: []peer{{"x:1", 2}}}},
		{"flag before config", []string{"--iface", "br0", "--config", file}, testConfig{Priority: 50, Iface: "br0", Interval: 100 * time.Millisecond, Peers: []string{"a", "b"}, Backends: []peer{{"x:1", 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testProgram.Parse(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := strings.Join(got.Peers, ","), strings.Join(tt.want.Peers, ","); g != w {
				t.Errorf("peers = %q, want %q", g, w)
			}
			got.Peers, tt.want.Peers = nil, nil
			if len(got.Backends) != len(tt.want.Backends) || (len(got.Backends) > 0 && got.Backends[0] != tt.want.Backends[0]) {
				t.Errorf("backends = %v, want %v", got.Backends, tt.want.Backends)
			}
			if got.Priority != tt.want.Priority || got.Iface != tt.want.Iface || got.Interval != tt.want.Interval {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // empty: no file
		args []string
		want string // substring of the error, with FILE standing for the file path
	}{
		{"unknown key", "priority: 5\npriorty: 7\n", nil, "FILE:2: priorty: unknown key (did you mean \"priority\"?)"},
		{"wrong type", "iface: eth1\npriority: high\n", nil, "FILE:2: priority: cannot unmarshal !!str `high` into int"},
		{"bad duration", "interval: soon\n", nil, "FILE:1: interval:"},
		{"out of range in file", "iface: eth1\n\npriority: 300\n", nil, "FILE:3: priority: must be 1-255, got 300"},
		{"nested out of range", "backends:\n  - addr: a\n    weight: 1\n  - addr: b\n    weight: -1\n", nil, "FILE:5: backends.1.weight: must not be negative"},
		{"out of range by flag", "priority: 5\n", []string{"--priority", "0"}, "flag --priority: must be 1-255, got 0"},
		{"bad yaml", "priority: [1\n", nil, "FILE:"},
		{"duration without a unit in file", "interval: 2\n", nil, "FILE:1: interval: cannot unmarshal !!int `2` into time.Duration (a duration needs a unit, e.g. 2s)"},
		{"unknown flag", "", []string{"--nope"}, "flag --nope: unknown flag; see --help"},
		{"misspelt flag", "", []string{"--priorty", "3"}, "flag --priorty: unknown flag (did you mean --priority?); see --help"},
		{"misspelt flag with one dash", "", []string{"-ifac=eth1"}, "flag --ifac: unknown flag (did you mean --iface?); see --help"},
		{"duration without a unit", "", []string{"--interval", "2"}, `flag --interval: invalid value "2": a duration needs a unit, e.g. 2s`},
		{"fraction without a unit", "", []string{"--interval=0.5"}, `flag --interval: invalid value "0.5": a duration needs a unit, e.g. 0.5s`},
		{"bad duration", "", []string{"--interval", "soon"}, `flag --interval: invalid value "soon": want a duration such as 1.5s, 300ms or 2m`},
		{"bad number", "", []string{"--priority", "high"}, `flag --priority: invalid value "high": not a valid int`},
		{"flag without its value", "", []string{"--iface"}, "flag --iface: needs a value; see --help"},
		{"bad boolean", "", []string{"--check-config=maybe"}, `flag --check-config: invalid value "maybe": want true or false (--check-config alone means true)`},
		{"stray argument", "", []string{"extra"}, `unexpected argument "extra"; see --help`},
		{"missing file", "", []string{"--config", "/nonexistent/x.yaml"}, "/nonexistent/x.yaml: cannot read config: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
				args = append([]string{"--config", path}, args...)
			}
			_, err := testProgram.Parse(args)
			if err == nil {
				t.Fatal("no error")
			}
			want := strings.ReplaceAll(tt.want, "FILE", path)
			if tt.file == "" && err.Error() != want {
				t.Errorf("error %q, want exactly %q", err, want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
			if Exit("testd", err) != 2 {
				t.Errorf("exit code for %v is not 2", err)
			}
		})
	}
}

func TestCheckConfig(t *testing.T) {
	good := writeFile(t, "priority: 9\n")
	if _, err := testProgram.Parse([]string{"--config", good, "--check-config"}); !errors.Is(err, ErrHelp) {
		t.Fatalf("valid config: err = %v, want ErrHelp (exit 0)", err)
	}
	bad := writeFile(t, "priority: 0\n")
	if _, err := testProgram.Parse([]string{"--config", bad, "--check-config"}); err == nil || errors.Is(err, ErrHelp) {
		t.Fatalf("invalid config: err = %v, want a config error", err)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--version"}} {
		_, err := testProgram.Parse(args)
		if !errors.Is(err, ErrHelp) {
			t.Errorf("%v: err = %v, want ErrHelp", args, err)
		}
		if Exit("testd", err) != 0 {
			t.Errorf("%v: exit code not 0", args)
		}
	}
}

func TestHelpWritesFlagsAsTheREADME(t *testing.T) {
	var out strings.Builder
	p := testProgram
	p.Summary = "testd tests."
	p.Output = &out
	for _, args := range [][]string{{"--help"}, {"-help"}, {"-h"}} {
		out.Reset()
		if _, err := p.Parse(args); !errors.Is(err, ErrHelp) {
			t.Fatalf("%v: err = %v, want ErrHelp", args, err)
		}
		for _, want := range []string{
			"Usage: testd [flags]\n\ntestd tests.\n\nFlags:\n",
			"\n  --iface string\n    \tinterface (default \"eth0\")\n",
			"\n  --interval duration\n    \tinterval (default 1s)\n",
			"\n  --priority int\n    \tpriority (default 100)\n",
			"\n  --check-config\n    \tload and validate",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: help does not contain %q:\n%s", args, want, out.String())
			}
		}
		if strings.Contains(out.String(), "\n  -i") {
			t.Errorf("%v: help writes a flag with one dash:\n%s", args, out.String())
		}
	}
}

// TestCheckHook: Program.Check runs with --check-config only, and its errors are tied to the
// flag or file line that set the value, as Validate's are.
func TestCheckHook(t *testing.T) {
	p := testProgram
	p.Check = func(c *testConfig) error {
		return FieldErrorf("iface", "interface %q does not exist", c.Iface)
	}
	if _, err := p.Parse([]string{"--iface", "nosuch0"}); err != nil {
		t.Errorf("without --check-config: err = %v, want none (Check does not run)", err)
	}
	_, err := p.Parse([]string{"--iface", "nosuch0", "--check-config"})
	if want := `flag --iface: interface "nosuch0" does not exist`; err == nil || err.Error() != want {
		t.Errorf("flag: err = %v, want %q", err, want)
	}
	file := writeFile(t, "priority: 3\niface: nosuch1\n")
	_, err = p.Parse([]string{"--config", file, "--check-config"})
	if want := file + `:2: iface: interface "nosuch1" does not exist`; err == nil || err.Error() != want {
		t.Errorf("file: err = %v, want %q", err, want)
	}
	if Exit("testd", err) != 2 {
		t.Errorf("exit code for %v is not 2", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("priority: 5\npeer: [a]\nbackends: [{addr: x, weight: 1}]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c testConfig
		doc, err := Decode("f.yaml", data, &c)
		if err == nil && doc != nil {
			_ = lineOf(doc, "backends.0.weight")
			_ = locate(c.Validate(), "f.yaml", doc, nil)
		}
	})
}
