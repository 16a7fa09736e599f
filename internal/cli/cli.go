// Package cli is the run skeleton that apiserver, vipd and lbproxy share: parse the flags
// and config file (with --help, --version and --check-config), build the program's value,
// start it, run it until SIGTERM or SIGINT, reload it on SIGHUP where it can, shut down.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hacp/hacp/pkg/config"
)

// Daemon is what a program builds from its configuration: Run serves until ctx ends, then
// shuts down in order and returns.
type Daemon interface {
	Run(ctx context.Context) error
}

// Starter is a Daemon with a start-up step (binding its listeners, say) that runs before
// Run and whose failure is reported as a start failure (exit 1) without running.
type Starter interface {
	Start(ctx context.Context) error
}

// Main describes one program for Run. T is its config struct, D what it builds from it.
type Main[T any, D Daemon] struct {
	// Program parses the command line and the --config file.
	Program config.Program[T]
	// LogLevel returns the configured log level ("debug", "info", ...).
	LogLevel func(cfg *T) string
	// New builds the daemon; its error is a configuration error (exit 2).
	New func(cfg *T, log *slog.Logger) (D, error)
	// Reload, when set, applies a configuration parsed again on SIGHUP; without it SIGHUP
	// keeps its default action.
	Reload func(d D, cfg *T, log *slog.Logger) error
	// ReloadFailed is the message logged when the new configuration does not parse or
	// Reload returns an error.
	ReloadFailed string
	// SecondSignalKills: after the first SIGTERM or SIGINT started the shutdown, a second
	// one kills the process instead of being ignored.
	SecondSignalKills bool
	// Stderr receives errors and the logs; os.Stderr when nil.
	Stderr io.Writer
}

// Run runs the program with the command-line arguments args (without the program name)
// and returns its exit code: 0 after a clean stop, --help, --version or a valid
// --check-config; 2 for a configuration error; 1 when starting or running failed.
func (m Main[T, D]) Run(args []string) int {
	stderr := m.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	name := m.Program.Name
	cfg, err := m.Program.Parse(args)
	if err != nil {
		if errors.Is(err, config.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	log := config.NewLogger(stderr, m.LogLevel(cfg))
	d, err := m.New(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if m.SecondSignalKills {
		go func() {
			<-ctx.Done()
			stop() // the default action again: a second signal kills the process
		}()
	}
	if m.Reload != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		done := make(chan struct{})
		defer func() { signal.Stop(hup); close(done) }()
		go m.reloadOn(hup, done, args, d, log)
	}

	if s, ok := any(d).(Starter); ok {
		if err := s.Start(ctx); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	if err := d.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	log.Info(name + " stopped")
	return 0
}

// reloadOn parses the command line and --config again on each signal from hup, until done
// is closed, and hands the result to Reload; a failure is logged and the running
// configuration stays.
func (m Main[T, D]) reloadOn(hup <-chan os.Signal, done <-chan struct{}, args []string, d D, log *slog.Logger) {
	for {
		select {
		case <-hup:
		case <-done:
			return
		}
		cfg, err := m.Program.Parse(args)
		if err == nil {
			err = m.Reload(d, cfg, log)
		}
		if err != nil {
			log.Error(m.ReloadFailed, "err", err.Error())
		}
	}
}
