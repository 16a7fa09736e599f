// Command apiserver serves a Kubernetes-compatible API (kubectl and client-go
// work unmodified) over etcd, embedded in the process by default. See pkg/apiserver.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/hacp/hacp/internal/cli"
	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/config"
)

var program = config.Program[server.Config]{
	Name: "apiserver",
	Summary: `apiserver serves the Kubernetes API over etcd: the built-in kinds of core/v1 and of the
usual API groups (apps, batch, networking, RBAC, storage, ...; kubectl api-resources lists
them), CustomResourceDefinitions and aggregated APIs (APIService), with discovery, OpenAPI,
Table output, patch, watch, admission and audit. By default it runs an etcd member
in-process (data in --data-dir/etcd); --etcd-servers uses an external cluster. It serves
HTTPS on --bind-address:--secure-port, authenticates clients by certificate (CN = user,
O = groups), static token (--token-auth-file) or ServiceAccount token (kubectl create
token), generates a CA, serving and admin certificates and a ServiceAccount signing key in
--data-dir/pki on first start and writes --data-dir/admin.kubeconfig. It runs no
controller-manager, scheduler or kubelet: "make run-cluster" starts upstream's next to it.

Example: apiserver --data-dir _data && kubectl --kubeconfig _data/admin.kubeconfig get ns`,
	Version: version.Version,
	Default: server.DefaultConfig,
	Flags:   func(fs *flag.FlagSet, c *server.Config) { c.AddFlags(fs) },
	Check:   (*server.Config).CheckHost,
}

var apiserverMain = cli.Main[server.Config, apiserverDaemon]{
	Program:  program,
	LogLevel: func(c *server.Config) string { return c.LogLevel },
	New: func(c *server.Config, log *slog.Logger) (apiserverDaemon, error) {
		s, err := server.New(c, log)
		return apiserverDaemon{s}, err
	},
	// SIGHUP reads the certificate files again now instead of at the next poll
	// (certreload.DefaultInterval); the rest of the configuration needs a restart.
	Reload: func(d apiserverDaemon, _ *server.Config, log *slog.Logger) error {
		log.Info("SIGHUP: certificate files read again", "changed", d.ReloadCertificates())
		return nil
	},
	ReloadFailed:      "SIGHUP: configuration does not parse, certificates not read again",
	SecondSignalKills: true,
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int { return apiserverMain.Run(args) }

// apiserverDaemon starts the server (etcd, listeners, caches) before it serves, and tells
// the user where it serves.
type apiserverDaemon struct{ *server.Server }

func (s apiserverDaemon) Start(ctx context.Context) error {
	if err := s.Server.Start(ctx); err != nil {
		return err
	}
	// Start-up allocates several times what a ready server keeps (the handler, the routes,
	// the caches filled from etcd); return what it freed to the OS now instead of holding
	// it until the heap grows into it again.
	go debug.FreeOSMemory()
	if p := s.KubeconfigPath(); p != "" {
		fmt.Fprintf(os.Stderr, "apiserver: serving %s\n  export KUBECONFIG=%s\n  kubectl get namespaces\n", s.URL(), p)
	}
	return nil
}

func (s apiserverDaemon) Run(ctx context.Context) error { return s.Serve(ctx) }
