// Command hacpctl is the operator's view of an hacp control plane: `hacpctl status` shows
// every master's vipd, lbproxy, apiserver, etcd member and certificates in one view and
// exits non-zero when anything is degraded; `hacpctl certs check|renew` looks after the
// local master's certificate files. See pkg/ctl and docs/cli.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/config"
	"github.com/hacp/hacp/pkg/ctl"
)

const usage = `Usage: hacpctl COMMAND [flags]

hacpctl shows and maintains an hacp control plane (apiserver, vipd, lbproxy on every master).

Commands:
  status         every master's VRRP/BGP state, VIP holder, lbproxy backends, apiserver
                 readiness and version, etcd member and certificate expiry; exit 0 when
                 healthy, 1 with a one-line reason when anything is degraded
  certs check    list this master's certificate files; exit 1 if one expires within --warn
  certs renew    re-issue this master's leaf certificates from the local CA (files only)

Run 'hacpctl COMMAND --help' for a command's flags. Exit code 2: bad usage or configuration.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs hacpctl with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "hacpctl %s\n", version.Version)
		return 0
	case "status":
		return status(args[1:], stdout, stderr)
	case "certs":
		if len(args) > 1 {
			switch args[1] {
			case "check":
				return certsCheck(args[2:], stdout, stderr)
			case "renew":
				return certsRenew(args[2:], stdout, stderr)
			}
		}
		fmt.Fprintln(stderr, "hacpctl certs: want 'certs check' or 'certs renew'; see --help")
		return 2
	}
	fmt.Fprintf(stderr, "hacpctl: unknown command %q; see --help\n", args[0])
	return 2
}

// parse parses a command's flags; done means exit with code (after --help or an error).
func parse[T any](p config.Program[T], args []string, stdout, stderr io.Writer) (cfg *T, code int, done bool) {
	p.Version = version.Version
	p.Output = stdout
	cfg, err := p.Parse(args)
	switch {
	case errors.Is(err, config.ErrHelp):
		return nil, 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return nil, 2, true
	}
	return cfg, 0, false
}

// hasConfigFlag reports whether args name a --config file.
func hasConfigFlag(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "config" {
			return true
		}
		if a == "--" {
			break
		}
	}
	return false
}

func status(args []string, stdout, stderr io.Writer) int {
	if !hasConfigFlag(args) {
		args = append([]string{"--config", ctl.DefaultConfigFile}, args...)
	}
	cfg, code, done := parse(config.Program[ctl.Config]{
		Name: "hacpctl status",
		Summary: `hacpctl status reads every master listed in --config (default ` + ctl.DefaultConfigFile + `): vipd's and
lbproxy's /status and /metrics, the apiserver's /readyz, /version and /metrics, and the etcd
member's Status (through its client URL, or the apiserver's etcd_* metrics). It prints one
view and exits 0 when healthy, 1 when degraded: a master unreachable, no or two VIP holders,
a VRRP instance in FAULT, a BGP session down, a VIP conflict, a backend DOWN, an apiserver
not ready, an etcd member without leader, with an alarm or lagging, a certificate expiring
within --cert-warn. The first reason goes to stderr on one line, naming master and component.`,
		Default: ctl.DefaultConfig,
		Flags:   func(fs *flag.FlagSet, c *ctl.Config) { c.AddFlags(fs) },
	}, args, stdout, stderr)
	if done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	r, err := ctl.Collect(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "hacpctl status: %v\n", err)
		return 2
	}
	if cfg.Output == "json" {
		err = ctl.WriteJSON(stdout, r)
	} else {
		err = ctl.WriteText(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hacpctl status: %v\n", err)
		return 1
	}
	if !r.Healthy {
		fmt.Fprintf(stderr, "hacpctl status: DEGRADED: %s\n", r.Reason())
		return 1
	}
	return 0
}

type certsOptions struct {
	Dirs     []string      `yaml:"dir"`
	Warn     time.Duration `yaml:"warn"`
	ValidFor time.Duration `yaml:"valid-for"`
	Output   string        `yaml:"output"`
}

func (o *certsOptions) Validate() error {
	var errs []error
	if len(o.Dirs) == 0 {
		errs = append(errs, config.FieldErrorf("dir", "name at least one directory"))
	}
	if o.Output != "text" && o.Output != "json" {
		errs = append(errs, config.FieldErrorf("output", "want text or json, got %q", o.Output))
	}
	if o.Warn < 0 || o.ValidFor < 0 {
		errs = append(errs, config.FieldErrorf("warn", "durations must not be negative"))
	}
	return errors.Join(errs...)
}

func certsProgram(name, summary string, flags func(fs *flag.FlagSet, o *certsOptions)) config.Program[certsOptions] {
	return config.Program[certsOptions]{
		Name:    name,
		Summary: summary,
		Default: func() *certsOptions {
			return &certsOptions{Dirs: append([]string(nil), ctl.DefaultCertDirs...), Warn: 720 * time.Hour, Output: "text"}
		},
		Flags: func(fs *flag.FlagSet, o *certsOptions) {
			config.StringList(fs, &o.Dirs, "dir", "`directory` to look for certificate files in, recursively (repeat or comma-separate; default "+strings.Join(ctl.DefaultCertDirs, ",")+")")
			fs.StringVar(&o.Output, "o", o.Output, "output `format`: text or json (same as --output)")
			fs.StringVar(&o.Output, "output", o.Output, "output `format`: text or json")
			flags(fs, o)
		},
	}
}
