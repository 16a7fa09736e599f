// Command lbproxy is a health-checking TCP load balancer for the apiservers of an HA
// control plane: it listens on the VIP port and spreads connections over every master's
// apiserver whose /healthz answers 200. See pkg/lb.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/config"
	"github.com/hacp/hacp/pkg/lb"
)

var program = config.Program[lb.Config]{
	Name: "lbproxy",
	Summary: `lbproxy is a TCP load balancer for Kubernetes apiservers (haproxy's role in the kubeadm
HA guide). It accepts client connections on --listen and forwards each one, unchanged
(TLS passes through), to one --backend that is UP. A backend is UP after --rise
successful active checks (HTTPS GET --check-path, expecting 200) and DOWN after --fall
failed ones, or at once when a client connect to it is refused or times out; the client
connection is then retried on another backend. The sessions of a backend that goes DOWN
are closed so that clients reconnect elsewhere. With no backend UP, clients are refused
at once. SIGHUP reloads the backend list and --sync-peer from --config without dropping
connections; SIGTERM drains.`,
	Version: version.Version,
	Default: lb.DefaultConfig,
	Flags:   func(fs *flag.FlagSet, c *lb.Config) { c.AddFlags(fs) },
}

func main() {
	if os.Getenv("GOGC") == "" {
		// Most of a busy proxy's heap is long-lived session state, and each new
		// connection leaves little garbage: half the usual headroom above the live heap
		// costs little collection work and saves a tenth of the memory per idle session.
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:]))
}

// gcPercent is lbproxy's GOGC unless the environment sets one.
const gcPercent = 50

func run(args []string) int {
	cfg, err := program.Parse(args)
	if err != nil {
		return config.Exit(program.Name, err)
	}
	log := config.NewLogger(os.Stderr, cfg.LogLevel)
	p, err := lb.New(cfg, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lbproxy: %v\n", err)
		return 2
	}
	if err := p.Listen(); err != nil {
		fmt.Fprintf(os.Stderr, "lbproxy: %v\n", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			reload(p, args, log)
		}
	}()
	if err := p.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "lbproxy: %v\n", err)
		return 1
	}
	log.Info("lbproxy stopped")
	return 0
}

// reload parses the command line and config file again and applies the new backend list.
func reload(p *lb.Proxy, args []string, log *slog.Logger) {
	cfg, err := program.Parse(args)
	if err == nil {
		var specs []lb.BackendSpec
		if specs, err = cfg.BackendSpecs(); err == nil {
			err = p.Reload(specs)
		}
	}
	if err != nil {
		log.Error("reload failed; keeping the current backends", "err", err.Error())
		return
	}
	if err := p.ReloadSync(cfg.SyncListen, cfg.SyncPeers); err != nil {
		log.Error("reload: connection-table sync peers unchanged", "err", err.Error())
	}
	log.Info("reloaded", "backends", len(cfg.Backends), "sync_peers", len(cfg.SyncPeers))
}
