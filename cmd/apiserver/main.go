// Command apiserver serves a Kubernetes-compatible API (kubectl and client-go
// work unmodified) over etcd, embedded in the process by default. See pkg/apiserver.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/config"
)

var program = config.Program[server.Config]{
	Name: "apiserver",
	Summary: `apiserver serves the Kubernetes API (core/v1 namespaces, pods, nodes, services,
endpoints, configmaps, secrets, serviceaccounts, events; coordination.k8s.io/v1 leases;
apps/v1 deployments) with discovery, OpenAPI, Table output, patch and watch, over etcd.
By default it runs an etcd member in-process (data in --data-dir/etcd); --etcd-servers uses
an external cluster. It serves HTTPS on --bind-address:--secure-port, authenticates clients
by certificate (CN = user, O = groups), static token (--token-auth-file) or ServiceAccount
token (kubectl create token), generates a CA, serving and admin certificates and a
ServiceAccount signing key in --data-dir/pki on first start and writes
--data-dir/admin.kubeconfig.

Example: apiserver --data-dir _data && kubectl --kubeconfig _data/admin.kubeconfig get ns`,
	Version: version.Version,
	Default: server.DefaultConfig,
	Flags:   func(fs *flag.FlagSet, c *server.Config) { c.AddFlags(fs) },
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, err := program.Parse(args)
	if err != nil {
		return config.Exit(program.Name, err)
	}
	log := config.NewLogger(os.Stderr, cfg.LogLevel)
	s, err := server.New(cfg, log)
	if err != nil {
		return config.Exit(program.Name, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process
	}()
	if err := s.Start(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: %v\n", err)
		return 1
	}
	// Start-up allocates several times what a ready server keeps (the handler, the routes,
	// the caches filled from etcd); return what it freed to the OS now instead of holding
	// it until the heap grows into it again.
	go debug.FreeOSMemory()
	if p := s.KubeconfigPath(); p != "" {
		fmt.Fprintf(os.Stderr, "apiserver: serving %s\n  export KUBECONFIG=%s\n  kubectl get namespaces\n", s.URL(), p)
	}
	if err := s.Serve(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: %v\n", err)
		return 1
	}
	return 0
}
