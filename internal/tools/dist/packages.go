package main

// pkgSpec is one Debian package: one program of cmd/ with what it needs on a master.
type pkgSpec struct {
	Name        string   // Debian package name
	Cmd         string   // the program's main package, relative to the repository
	Binary      string   // installed as /usr/bin/<Binary> (and bin/<Binary> in the tarball)
	Summary     string   // the Description's first line
	Description string   // the Description's body, one paragraph
	Unit        string   // systemd unit in deploy/packages/systemd, installed in /lib/systemd/system; "" for none
	Config      string   // default configuration in deploy/packages/config, installed as /etc/hacp/<name> (a conffile)
	Examples    []string // files of configs/ installed in /usr/share/doc/<Name>/examples
	StateDir    bool     // the postinst creates /var/lib/hacp (hacp:hacp 0700)
	Recommends  []string
}

// packages is the release: every entry is built for every architecture, and a missing cmd
// directory fails `make dist` (unless -allow-missing, for a branch without every program).
var packages = []pkgSpec{
	{
		Name:        "hacp-apiserver",
		Cmd:         "cmd/apiserver",
		Binary:      "hacp-apiserver",
		Summary:     "Kubernetes-compatible API server with an embedded etcd member",
		Description: "The hacp apiserver serves the Kubernetes API (discovery, CRUD, watch, CRDs, authentication, RBAC, admission) over etcd, by default a member embedded in the process: one per master, three masters in a Raft cluster.",
		Unit:        "hacp-apiserver.service",
		Config:      "apiserver.yaml",
		Examples:    []string{"apiserver.yaml", "audit-policy.yaml", "encryption.yaml"},
		StateDir:    true,
	},
	{
		Name:        "hacp-vipd",
		Cmd:         "cmd/vipd",
		Binary:      "hacp-vipd",
		Summary:     "VRRP virtual IP daemon for the hacp masters",
		Description: "vipd holds the control plane's virtual IP on one master and moves it to another within a fraction of a second when that master fails (VRRP v3, v2 for keepalived peers), or announces it over BGP.",
		Unit:        "hacp-vipd.service",
		Config:      "vipd.yaml",
		Examples:    []string{"vipd.yaml", "vipd-bgp.yaml"},
		Recommends:  []string{"nftables"},
	},
	{
		Name:        "hacp-lbproxy",
		Cmd:         "cmd/lbproxy",
		Binary:      "hacp-lbproxy",
		Summary:     "TCP load balancer from the virtual IP to every master's apiserver",
		Description: "lbproxy spreads client connections over every master's apiserver that passes its HTTPS health check, retries a failed connect on another one and drains on shutdown.",
		Unit:        "hacp-lbproxy.service",
		Config:      "lbproxy.yaml",
		Examples:    []string{"lbproxy.yaml"},
	},
	{
		Name:        "hacpctl",
		Cmd:         "cmd/hacpctl",
		Binary:      "hacpctl",
		Summary:     "operator's view and checks of an hacp control plane",
		Description: "hacpctl shows the state of every master (VRRP, lbproxy backends, apiserver, etcd member, certificates) in one view and exits non-zero when anything is degraded.",
		Examples:    []string{"hacpctl.yaml"},
	},
}
