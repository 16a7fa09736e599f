// Command vipd keeps a virtual IP address on one of several hosts with VRRP (v3, or v2 for
// keepalived peers): keepalived's role in the kubeadm HA guide. See pkg/vip and pkg/vrrp.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/hacp/hacp/internal/cli"
	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/config"
	"github.com/hacp/hacp/pkg/vip"
)

var program = config.Program[vip.Config]{
	Name: "vipd",
	Summary: `vipd holds one or more virtual IP addresses (--vip) on exactly one of a group of hosts
with VRRP: version 3 (RFC 5798) by default, version 2 (RFC 3768, with --auth-pass) for
keepalived peers that need it; it interoperates with keepalived in the same VRID. Adverts go
to multicast 224.0.0.18 on --iface, or to --unicast-peer addresses. The live host with the
highest --priority becomes MASTER: it binds the addresses with netlink (with a valid
lifetime it keeps refreshing, so a killed vipd cannot leave them behind) and sends
gratuitous ARPs. A backup takes over 3 advert intervals plus a skew time after the last
advert, or after the skew time alone when the master stops with SIGTERM (priority 0
advert). The health check (--check-url, by default /healthz through the local lbproxy
on 8443) lowers the priority by --check-weight or, with --check-action fault, gives
up mastership while it fails; a tracked interface going down always does. Several
instances: list them under "instances:" in --config (top-level keys are their defaults).
SIGHUP reloads --config; SIGTERM hands over and exits. /status and /metrics on --status-addr.

With --mode bgp, for masters that share no L2 segment, vipd instead runs an embedded BGP
speaker (GoBGP) and announces every --vip as a host route (/32, /128) to the --bgp-peer
routers while the health checks pass and the tracked interfaces are up, with the address
bound on lo (no ARP) meanwhile. Every healthy master announces; the routers spread
connections over them with ECMP. A failing check withdraws the route; SIGTERM withdraws,
waits for the peers to have been told, then closes the sessions and exits; a crashed
master's route lasts until the router's hold timer (--bgp-hold-time) expires. Peers that
refuse the session or cannot be reached are shown in /status and retried for ever. With
--bgp-announce leader only the healthy master holding a Lease (--lease-name) on the
apiserver (--kubeconfig, --lease-server) announces; on SIGTERM it withdraws, then releases
the Lease so that another takes over at once.

Example: vipd --iface eth0 --vip 10.0.0.100/24 --vrid 51 --priority 101 --advert-interval 100ms
Example: vipd --mode bgp --vip 10.0.0.100/32 --bgp-as 65100 --bgp-peer 10.0.1.1:65000
Example: vipd --mode bgp --vip 10.0.0.100/32 --bgp-as 65100 --bgp-peer 10.0.1.1:65000 --bgp-announce leader --kubeconfig /etc/kubernetes/admin.conf --lease-server https://127.0.0.1:6443`,
	Version: version.Version,
	Default: vip.DefaultConfig,
	Flags:   func(fs *flag.FlagSet, c *vip.Config) { c.AddFlags(fs) },
	Check:   (*vip.Config).CheckHost,
}

func main() {
	os.Exit(run(os.Args[1:]))
}

var vipdMain = cli.Main[vip.Config, daemon]{
	Program:  program,
	LogLevel: func(c *vip.Config) string { return c.LogLevel },
	New: func(c *vip.Config, log *slog.Logger) (daemon, error) {
		d, err := vip.New(c, log)
		return daemon{d, log}, err
	},
	Reload:       func(d daemon, c *vip.Config, _ *slog.Logger) error { return d.Reload(c) },
	ReloadFailed: "reload failed; keeping the running configuration where it could not be applied",
}

func run(args []string) int { return vipdMain.Run(args) }

// daemon logs where its status is served as it starts.
type daemon struct {
	*vip.Daemon
	log *slog.Logger
}

func (d daemon) Run(ctx context.Context) error {
	d.log.Info("vipd starting", "version", version.Version, "status", d.StatusAddr())
	return d.Daemon.Run(ctx)
}
