// Command lbproxy is a health-checking TCP load balancer for the apiservers of an HA
// control plane: it listens on the VIP port and spreads connections over every master's
// apiserver whose /healthz answers 200. See pkg/lb.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/hacp/hacp/internal/cli"
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
	Check:   (*lb.Config).CheckHost,
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

var lbproxyMain = cli.Main[lb.Config, proxy]{
	Program:  program,
	LogLevel: func(c *lb.Config) string { return c.LogLevel },
	New: func(c *lb.Config, log *slog.Logger) (proxy, error) {
		p, err := lb.New(c, log)
		return proxy{p}, err
	},
	Reload:       reload,
	ReloadFailed: "reload failed; keeping the current backends",
}

func run(args []string) int { return lbproxyMain.Run(args) }

// proxy opens its listener before it runs, so that a port in use fails the start.
type proxy struct{ *lb.Proxy }

func (p proxy) Start(context.Context) error { return p.Listen() }

// reload applies the backend list and the sync peers of a configuration parsed again.
func reload(p proxy, cfg *lb.Config, log *slog.Logger) error {
	specs, err := cfg.BackendSpecs()
	if err != nil {
		return err
	}
	if err := p.Reload(specs); err != nil {
		return err
	}
	if err := p.ReloadSync(cfg.SyncListen, cfg.SyncPeers); err != nil {
		log.Error("reload: connection-table sync peers unchanged", "err", err.Error())
	}
	log.Info("reloaded", "backends", len(cfg.Backends), "sync_peers", len(cfg.SyncPeers))
	return nil
}
