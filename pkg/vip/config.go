package vip

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hacp/hacp/internal/statustls"
	"github.com/hacp/hacp/pkg/bfd"
	"github.com/hacp/hacp/pkg/bgp"
	"github.com/hacp/hacp/pkg/config"
	"github.com/hacp/hacp/pkg/vrrp"
)

// Config is vipd's configuration. The top-level instance keys (iface, vip, vrid, ...)
// describe the single instance run when Instances is empty, and are the defaults of every
// entry of Instances otherwise.
type Config struct {
	Instance `yaml:",inline"`

	// Instances run several virtual routers (VRIDs) in one daemon; see Instance.
	Instances []Instance `yaml:"instances"`

	GARPCount       int           `yaml:"garp-count"`
	GARPSpacing     time.Duration `yaml:"garp-spacing"`
	GARPRepeatDelay time.Duration `yaml:"garp-repeat-delay"`
	GARPRefresh     time.Duration `yaml:"garp-refresh"`
	VIPLifetime     time.Duration `yaml:"vip-lifetime"`
	ResetConns      bool          `yaml:"reset-connections"`
	// HandoverTimeout is how long a master stopped with SIGTERM keeps the VIP while it waits
	// for a new master's advert (make-before-break); 0 is automatic, negative lets go at once.
	HandoverTimeout time.Duration `yaml:"handover-timeout"`
	// HandoverDrain is how long connections on a VIP that went to another master may go on
	// sending (their clients' packets no longer come here) before they are reset.
	HandoverDrain time.Duration `yaml:"handover-drain"`
	// HandoverForward: a new master passes packets of connections it does not know to the
	// master it took over from, during the drain (nftables).
	HandoverForward bool `yaml:"handover-forward"`

	CheckURL      string        `yaml:"check-url"`
	CheckInterval time.Duration `yaml:"check-interval"`
	CheckTimeout  time.Duration `yaml:"check-timeout"`
	CheckRise     int           `yaml:"check-rise"`
	CheckFall     int           `yaml:"check-fall"`
	CheckCAFile   string        `yaml:"check-ca-file"`
	CheckInsecure bool          `yaml:"check-insecure"`
	CheckExec     string        `yaml:"check-exec"`
	CheckAction   string        `yaml:"check-action"`
	CheckWeight   int           `yaml:"check-weight"`

	// ConflictProbe is how often a master or backup ARP/NDP-probes its VIPs for another
	// holder; 0 only listens (gratuitous ARPs, dropped adverts).
	ConflictProbe time.Duration `yaml:"conflict-probe-interval"`
	// YieldOnConflict makes a master that finds another holder step down and stay BACKUP
	// while that holder is there.
	YieldOnConflict bool `yaml:"yield-on-conflict"`

	Notify     string        `yaml:"notify"`
	FlapMax    int           `yaml:"flap-max"`
	FlapWindow time.Duration `yaml:"flap-window"`
	FlapHold   time.Duration `yaml:"flap-hold"`

	StatusAddr string `yaml:"status-addr"`
	// StatusTLS is the second, TLS status listener (client certificates required).
	StatusTLS statustls.Config `yaml:",inline"`
	LogLevel  string           `yaml:"log-level"`

	// Mode is vrrp (the default) or bgp; see BGPConfig.
	Mode      string `yaml:"mode"`
	BGPConfig `yaml:",inline"`
}

// BGPConfig is the BGP mode's settings: the daemon announces every --vip as a host route
// to its BGP peers (an embedded GoBGP speaker) while this host is healthy, and binds the
// addresses on lo meanwhile. The VRRP settings are not used in this mode.
type BGPConfig struct {
	BGPAS           string        `yaml:"bgp-as"`
	BGPRouterID     string        `yaml:"bgp-router-id"`
	BGPPeers        []string      `yaml:"bgp-peer"`
	BGPMultihop     int           `yaml:"bgp-multihop"`
	BGPSource       string        `yaml:"bgp-source"`
	BGPHoldTime     time.Duration `yaml:"bgp-hold-time"`
	BGPKeepalive    time.Duration `yaml:"bgp-keepalive"`
	BGPConnectRetry time.Duration `yaml:"bgp-connect-retry"`
	BGPListenPort   int           `yaml:"bgp-listen-port"`
	BGPNextHop      string        `yaml:"bgp-next-hop"`
	BGPCommunities  []string      `yaml:"bgp-community"`
	BGPAnnounce     string        `yaml:"bgp-announce"`
	BGPIface        string        `yaml:"bgp-iface"`
	BGPStopGrace    time.Duration `yaml:"bgp-stop-grace"`
	// BFD (RFC 5880, single-hop RFC 5881) with every peer, off unless set: a router whose
	// bfdd hears nothing for BFDMultiplier x BFDInterval drops this host's routes, and
	// this host tears down the BGP session of a peer whose BFD session goes down.
	BFD           bool          `yaml:"bfd"`
	BFDInterval   time.Duration `yaml:"bfd-interval"`
	BFDMultiplier int           `yaml:"bfd-multiplier"`

	// Leader election (bgp-announce: leader) through a coordination.k8s.io/v1 Lease.
	Kubeconfig         string        `yaml:"kubeconfig"`
	LeaseServer        string        `yaml:"lease-server"`
	LeaseNamespace     string        `yaml:"lease-namespace"`
	LeaseName          string        `yaml:"lease-name"`
	LeaseIdentity      string        `yaml:"lease-identity"`
	LeaseDuration      time.Duration `yaml:"lease-duration"`
	LeaseRenewDeadline time.Duration `yaml:"lease-renew-deadline"`
	LeaseRetryPeriod   time.Duration `yaml:"lease-retry-period"`
}

// Instance is one virtual router. In Config.Instances, zero fields take the top-level value.
type Instance struct {
	Name           string        `yaml:"name"`
	Iface          string        `yaml:"iface"`
	VIPs           []string      `yaml:"vip"`
	VRID           int           `yaml:"vrid"`
	Priority       int           `yaml:"priority"`
	AdvertInterval time.Duration `yaml:"advert-interval"`
	VRRPVersion    int           `yaml:"version-vrrp"`
	AuthPass       string        `yaml:"auth-pass"`
	Checksum       string        `yaml:"checksum"`
	NoPreempt      *bool         `yaml:"nopreempt"`
	PreemptDelay   time.Duration `yaml:"preempt-delay"`
	UnicastSrc     string        `yaml:"unicast-src"`
	UnicastPeers   []string      `yaml:"unicast-peer"`
	Label          string        `yaml:"label"`
	TrackIfaces    []string      `yaml:"track-iface"`
}

// DefaultConfig returns vipd's defaults: VRRPv3 at 100 ms adverts (1 s for VRRPv2),
// preemption on, the local apiserver's /healthz as health check with weight -50.
func DefaultConfig() *Config {
	f := false
	return &Config{
		Instance: Instance{
			Iface:       "eth0",
			VRID:        51,
			Priority:    100,
			VRRPVersion: 3,
			Checksum:    "pseudo-header",
			NoPreempt:   &f,
		},
		GARPCount:       5,
		GARPSpacing:     0,
		GARPRepeatDelay: 5 * time.Second,
		VIPLifetime:     0,
		ResetConns:      true,
		HandoverDrain:   500 * time.Millisecond,
		HandoverForward: true,
		CheckURL:        "https://127.0.0.1:8443/healthz",
		CheckInterval:   time.Second,
		CheckTimeout:    time.Second,
		CheckRise:       2,
		CheckFall:       2,
		CheckInsecure:   true,
		CheckAction:     "weight",
		CheckWeight:     -50,
		ConflictProbe:   time.Second,
		FlapMax:         0,
		FlapWindow:      time.Minute,
		FlapHold:        30 * time.Second,
		LogLevel:        "info",
		Mode:            "vrrp",
		BGPConfig: BGPConfig{
			BGPHoldTime:     9 * time.Second,
			BGPKeepalive:    3 * time.Second,
			BGPConnectRetry: 5 * time.Second,
			BGPAnnounce:     "anycast",
			BGPIface:        "lo",
			BGPStopGrace:    time.Second,
			BFDInterval:     300 * time.Millisecond, // FRR bfdd's defaults
			BFDMultiplier:   3,
			// client-go's and kube-vip's defaults
			LeaseNamespace:     "kube-system",
			LeaseName:          "vipd-bgp",
			LeaseDuration:      15 * time.Second,
			LeaseRenewDeadline: 10 * time.Second,
			LeaseRetryPeriod:   2 * time.Second,
		},
	}
}

type boolPtr struct{ p **bool }

func (b boolPtr) String() string {
	if b.p == nil || *b.p == nil {
		return "false"
	}
	return strconv.FormatBool(**b.p)
}
func (b boolPtr) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = &v
	return nil
}
func (b boolPtr) IsBoolFlag() bool { return true }

// AddFlags binds every setting to a flag of the same name.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	in := &c.Instance
	fs.StringVar(&in.Name, "name", in.Name, "instance `name` used in logs, notify and status (default \"vrid<N>\")")
	fs.StringVar(&in.Iface, "iface", in.Iface, "`interface` that carries the VRRP adverts and the virtual addresses")
	config.StringList(fs, &in.VIPs, "vip", "virtual `address` in CIDR form, e.g. 10.0.0.100/24 (repeatable, or comma-separated). The first one's family is the adverts' family (IPv6: VRRPv3 to ff02::12 from the link-local address); addresses of the other family move along but are not advertised")
	fs.IntVar(&in.VRID, "vrid", in.VRID, "virtual router `id`, 1-255; every router of one group uses the same")
	fs.IntVar(&in.Priority, "priority", in.Priority, "`priority` 1-255; the highest wins, 255 means this host owns the addresses")
	fs.DurationVar(&in.AdvertInterval, "advert-interval", in.AdvertInterval, "`interval` between adverts of the master: multiples of 10ms for VRRPv3, whole seconds for VRRPv2 (0: 100ms for VRRPv3, 1s for VRRPv2)")
	fs.IntVar(&in.VRRPVersion, "version-vrrp", in.VRRPVersion, "VRRP `version`: 3 (RFC 5798) or 2 (RFC 3768, for keepalived peers configured with version 2)")
	fs.StringVar(&in.AuthPass, "auth-pass", in.AuthPass, "VRRPv2 simple `password` (auth_type PASS, at most 8 characters); not allowed with VRRPv3")
	fs.StringVar(&in.Checksum, "checksum", in.Checksum, "VRRPv3 IPv4 checksum `mode`: pseudo-header (RFC 5798, keepalived) or message-only (some vendors)")
	fs.Var(boolPtr{&in.NoPreempt}, "nopreempt", "do not take over from a lower-priority master that is alive")
	fs.DurationVar(&in.PreemptDelay, "preempt-delay", in.PreemptDelay, "tolerate a lower-priority master for this `duration` before preempting it")
	fs.StringVar(&in.UnicastSrc, "unicast-src", in.UnicastSrc, "source `address` of the adverts (default: the first IPv4 address of --iface, or its link-local IPv6 address); it breaks priority ties")
	config.StringList(fs, &in.UnicastPeers, "unicast-peer", "send adverts to this peer `address` instead of multicast 224.0.0.18 (ff02::12), and accept adverts only from listed peers (repeatable)")
	fs.StringVar(&in.Label, "label", in.Label, "interface `label` for the virtual addresses, e.g. eth0:vip")
	config.StringList(fs, &in.TrackIfaces, "track-iface", "`interface` whose link going down puts the instance in FAULT (repeatable); --iface is always tracked")

	fs.IntVar(&c.GARPCount, "garp-count", c.GARPCount, "`count` of gratuitous ARPs (unsolicited NAs for IPv6) per address in a burst on becoming master")
	fs.DurationVar(&c.GARPSpacing, "garp-spacing", c.GARPSpacing, "`delay` between the gratuitous ARPs of one burst")
	fs.DurationVar(&c.GARPRepeatDelay, "garp-repeat-delay", c.GARPRepeatDelay, "send a second burst this `duration` after becoming master (0 disables; keepalived's garp_master_delay)")
	fs.DurationVar(&c.GARPRefresh, "garp-refresh", c.GARPRefresh, "while master, repeat a burst every `interval` (0 disables)")
	fs.BoolVar(&c.ResetConns, "reset-connections", c.ResetConns, "when giving up an IPv4 VIP, abort the TCP connections that use it (the kernel sends each client a reset) so clients reconnect to the new master at once instead of waiting for a timeout; long watches included")
	fs.DurationVar(&c.HandoverTimeout, "handover-timeout", c.HandoverTimeout, "on SIGTERM a master announces priority 0 but keeps the VIP, and its local lbproxy keeps serving, until a new master has bound and announced it (its advert arrives): make-before-break, so that no client packet meets a host without the VIP. This `duration` bounds the wait for a lone master (0: the master down interval at priority 1 plus one advert interval; negative: let go at once, as RFC 5798 and keepalived do)")
	fs.DurationVar(&c.HandoverDrain, "handover-drain", c.HandoverDrain, "after the VIP went to another master, connections still using it may send what they have (a response in flight reaches the client) for this `duration` before they are reset (--reset-connections); the local lbproxy needs CAP_NET_RAW for its replies to leave without the address")
	fs.BoolVar(&c.HandoverForward, "handover-forward", c.HandoverForward, "after taking the VIP over from a live master (SIGTERM, preemption), pass the packets of connections this host does not know (those the old master carries: a request caught between its handshake and its response) to that master for --handover-drain instead of resetting them; needs nft (nftables)")
	fs.DurationVar(&c.VIPLifetime, "vip-lifetime", c.VIPLifetime, "netlink valid `lifetime` of the virtual addresses, refreshed while master so a killed vipd cannot leave them behind (0: max(2s, 5 x advert interval), rounded up to whole seconds)")

	fs.StringVar(&c.CheckURL, "check-url", c.CheckURL, "health check `URL` (https, http or tcp://host:port); empty disables. The default probes /healthz through the local lbproxy (the VIP's port, 8443): it fails when this master cannot serve the VIP (its lbproxy is dead, or no apiserver it reaches is healthy), and a dead local apiserver alone does not move the VIP, since lbproxy routes around it")
	fs.DurationVar(&c.CheckInterval, "check-interval", c.CheckInterval, "`interval` between health checks")
	fs.DurationVar(&c.CheckTimeout, "check-timeout", c.CheckTimeout, "`timeout` of one health check")
	fs.IntVar(&c.CheckRise, "check-rise", c.CheckRise, "`n` consecutive successful checks make an unhealthy target healthy")
	fs.IntVar(&c.CheckFall, "check-fall", c.CheckFall, "`n` consecutive failed checks make a healthy target unhealthy")
	fs.StringVar(&c.CheckCAFile, "check-ca-file", c.CheckCAFile, "CA certificate `file` that verifies the checked server; setting it turns --check-insecure off")
	fs.BoolVar(&c.CheckInsecure, "check-insecure", c.CheckInsecure, "do not verify the checked server's certificate (only its /healthz answer is used)")
	fs.StringVar(&c.CheckExec, "check-exec", c.CheckExec, "`command` (split on spaces, no shell) run every --check-interval as an extra check; exit status 0 is healthy")
	fs.StringVar(&c.CheckAction, "check-action", c.CheckAction, "what a failing check does: `weight` (add --check-weight to the priority) or fault (give up mastership with a priority 0 advert)")
	fs.IntVar(&c.CheckWeight, "check-weight", c.CheckWeight, "priority `change`, -254 to 254, like keepalived's weight: a negative one applies while the check fails, a positive one while it passes")

	fs.DurationVar(&c.ConflictProbe, "conflict-probe-interval", c.ConflictProbe, "ARP-probe (NDP-probe for IPv6) every VIP this often, as MASTER and as BACKUP, to notice a second holder (a peer with another password, VRID or version, or a host with the address configured); 0 disables the probes and leaves only gratuitous ARPs and dropped adverts as signs, which miss a keepalived MASTER that holds back its adverts while it hears vipd's. A conflict is logged at ERROR, shown in /status and in vipd_vip_conflict")
	fs.BoolVar(&c.YieldOnConflict, "yield-on-conflict", c.YieldOnConflict, "a MASTER that finds another holder of its VIPs steps down (priority 0 advert, addresses removed) and stays BACKUP while the other holder answers or advertises them, instead of holding the VIP beside it")
	fs.StringVar(&c.Notify, "notify", c.Notify, "`command` (split on spaces, no shell) run on every transition with arguments INSTANCE <name> <state> <priority>, like keepalived's notify")
	fs.IntVar(&c.FlapMax, "flap-max", c.FlapMax, "flap damping: at most `n` takeovers per --flap-window, then hold in BACKUP for --flap-hold (0 disables)")
	fs.DurationVar(&c.FlapWindow, "flap-window", c.FlapWindow, "flap damping: the `window` in which --flap-max takeovers are counted")
	fs.DurationVar(&c.FlapHold, "flap-hold", c.FlapHold, "flap damping: how long (`duration`) to hold in BACKUP once --flap-max is exceeded")

	fs.StringVar(&c.Mode, "mode", c.Mode, "how the addresses float: `vrrp` (one holder on a shared L2 segment, moved by VRRP adverts) or bgp (announced as /32 and /128 routes to --bgp-peer routers, for masters in different subnets)")
	b := &c.BGPConfig
	fs.StringVar(&b.BGPAS, "bgp-as", b.BGPAS, "BGP mode: this host's autonomous system `number` (1-4294967295, or asdot 1.10)")
	fs.StringVar(&b.BGPRouterID, "bgp-router-id", b.BGPRouterID, "BGP mode: router `ID`, an IPv4 address unique among the speakers (default: the first peer's session source address, else the host's first global IPv4 address)")
	config.StringList(fs, &b.BGPPeers, "bgp-peer", "BGP mode: neighbour as `ADDR:AS[:password]` ([ADDR] for IPv6; the password is a TCP MD5 key); repeatable")
	fs.IntVar(&b.BGPMultihop, "bgp-multihop", b.BGPMultihop, "BGP mode: eBGP multihop `TTL` for peers that are not directly connected (0: TTL 1)")
	fs.StringVar(&b.BGPSource, "bgp-source", b.BGPSource, "BGP mode: local `address` of the sessions (default: chosen by the routing table)")
	fs.DurationVar(&b.BGPHoldTime, "bgp-hold-time", b.BGPHoldTime, "BGP mode: proposed hold `time` (3s-65535s, whole seconds): a router withdraws the routes of a crashed host this long after its last message; the session uses the smaller of both sides'")
	fs.DurationVar(&b.BGPKeepalive, "bgp-keepalive", b.BGPKeepalive, "BGP mode: keepalive `interval` (whole seconds, below the hold time; a third of it is usual)")
	fs.DurationVar(&b.BGPConnectRetry, "bgp-connect-retry", b.BGPConnectRetry, "BGP mode: `interval` between attempts to open a session that is down (GoBGP adds up to as much again at random)")
	fs.IntVar(&b.BGPListenPort, "bgp-listen-port", b.BGPListenPort, "BGP mode: accept sessions on this TCP `port` as well (179 is BGP's); 0: only open them")
	fs.StringVar(&b.BGPNextHop, "bgp-next-hop", b.BGPNextHop, "BGP mode: next-hop `address` of the announced routes (default: the session's own address)")
	config.StringList(fs, &b.BGPCommunities, "bgp-community", "BGP mode: standard `community` attached to the routes, AS:VALUE or no-export, no-advertise, ...; repeatable")
	fs.StringVar(&b.BGPAnnounce, "bgp-announce", b.BGPAnnounce, "BGP mode: who announces: `anycast` (every healthy host; the routers spread connections with ECMP) or leader (only the healthy host holding the --lease-name Lease on the apiserver)")
	fs.StringVar(&b.Kubeconfig, "kubeconfig", b.Kubeconfig, "BGP leader mode: kubeconfig `file` with the apiserver's CA and a client certificate or token allowed to get, create and update the Lease (e.g. /etc/kubernetes/admin.conf)")
	fs.StringVar(&b.LeaseServer, "lease-server", b.LeaseServer, "BGP leader mode: apiserver `URL` to use instead of the kubeconfig's server; point it at this host's own apiserver (https://127.0.0.1:6443), never at the VIP the election decides about")
	fs.StringVar(&b.LeaseNamespace, "lease-namespace", b.LeaseNamespace, "BGP leader mode: `namespace` of the Lease")
	fs.StringVar(&b.LeaseName, "lease-name", b.LeaseName, "BGP leader mode: `name` of the Lease; every vipd of one VIP uses the same")
	fs.StringVar(&b.LeaseIdentity, "lease-identity", b.LeaseIdentity, "BGP leader mode: this host's holderIdentity in the Lease (default: the host name)")
	fs.DurationVar(&b.LeaseDuration, "lease-duration", b.LeaseDuration, "BGP leader mode: the others take the Lease over this `long` after it last changed (a crashed leader's cost, on top of the router's hold timer)")
	fs.DurationVar(&b.LeaseRenewDeadline, "lease-renew-deadline", b.LeaseRenewDeadline, "BGP leader mode: a leader that could not renew the Lease for this `long` withdraws its routes (below --lease-duration)")
	fs.DurationVar(&b.LeaseRetryPeriod, "lease-retry-period", b.LeaseRetryPeriod, "BGP leader mode: `interval` between renewals and between the candidates' attempts")
	fs.DurationVar(&b.BGPStopGrace, "bgp-stop-grace", b.BGPStopGrace, "BGP mode: on SIGTERM, after the withdrawals are sent, keep the address and the sessions this `long` so the routers have moved traffic away before vipd exits (order lbproxy to stop after vipd)")
	fs.BoolVar(&b.BFD, "bfd", b.BFD, "BGP mode: run a BFD session (RFC 5880, single-hop, UDP 3784) with every peer; the router (FRR: bfdd, neighbor X bfd) then drops a crashed host's routes after --bfd-multiplier x --bfd-interval instead of its hold time, and a peer whose BFD session goes down has its BGP session torn down at once")
	fs.DurationVar(&b.BFDInterval, "bfd-interval", b.BFDInterval, "BGP mode with --bfd: desired transmit and required receive `interval` (10ms-1m; the session uses the larger of both sides'; FRR's default is 300ms)")
	fs.IntVar(&b.BFDMultiplier, "bfd-multiplier", b.BFDMultiplier, "BGP mode with --bfd: detect multiplier, the packets a side may miss before the session goes down (2-255)")
	fs.StringVar(&b.BGPIface, "bgp-iface", b.BGPIface, "BGP mode: `interface` the announced addresses are bound on while announced (as /32 or /128, so the host answers no ARP for them)")

	fs.StringVar(&c.StatusAddr, "status-addr", c.StatusAddr, "serve /status (JSON) and /metrics (Prometheus) on this `host:port` (empty: off)")
	c.StatusTLS.AddFlags(fs)
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log `level`: debug, info, warn or error")
}

// Resolved is one instance with every default applied and parsed.
type Resolved struct {
	Name         string
	Iface        string
	IPv6         bool           // adverts over IPv6 (ff02::12): the first VIP is IPv6
	VIPs         []netip.Prefix // advertised: the family of the first VIP
	ExtraVIPs    []netip.Prefix // bound and announced but not advertised: the other family
	VRID         uint8
	Priority     uint8
	Interval     time.Duration
	Version      uint8
	AuthPass     string
	Checksum     vrrp.ChecksumMode
	Preempt      bool
	PreemptDelay time.Duration
	UnicastSrc   netip.Addr
	UnicastPeers []netip.Addr
	Label        string
	TrackIfaces  []string
}

// Resolve applies defaults and parses every instance; the errors are config.FieldErrors.
func (c *Config) Resolve() ([]Resolved, error) {
	list := c.Instances
	prefix := func(i int) string { return "instances." + strconv.Itoa(i) + "." }
	if len(list) == 0 {
		list = []Instance{c.Instance}
		prefix = func(int) string { return "" }
	}
	var out []Resolved
	var errs []error
	names := map[string]bool{}
	vrids := map[string]bool{}
	for i, in := range list {
		r, err := c.resolveOne(in, prefix(i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if names[r.Name] {
			errs = append(errs, config.FieldErrorf(prefix(i)+"name", "duplicate instance name %q", r.Name))
		}
		key := fmt.Sprintf("%s/%d/v%d", r.Iface, r.VRID, r.Version)
		if vrids[key] {
			errs = append(errs, config.FieldErrorf(prefix(i)+"vrid", "VRID %d is used twice on %s", r.VRID, r.Iface))
		}
		names[r.Name], vrids[key] = true, true
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// resolveOne checks one instance (at config path p, for the errors) with the defaults filled
// in, and returns it resolved.
func (c *Config) resolveOne(in Instance, p string) (Resolved, error) {
	in = inheritDefaults(in, c.Instance)
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, config.FieldErrorf(p+key, format, args...)) }
	r := Resolved{Name: in.Name, Iface: in.Iface, AuthPass: in.AuthPass, Label: in.Label, PreemptDelay: in.PreemptDelay, TrackIfaces: in.TrackIfaces}
	r.Preempt = in.NoPreempt == nil || !*in.NoPreempt
	resolveElection(&r, in, bad)
	resolveVIPs(&r, in, bad)
	resolveUnicast(&r, in, bad)
	return r, errors.Join(errs...)
}

// inheritDefaults fills the fields an instance leaves unset from the defaults d (the
// top-level settings and flags), and the advert interval from the VRRP version.
func inheritDefaults(in, d Instance) Instance {
	if in.Iface == "" {
		in.Iface = d.Iface
	}
	if len(in.VIPs) == 0 {
		in.VIPs = d.VIPs
	}
	if in.VRID == 0 {
		in.VRID = d.VRID
	}
	if in.Priority == 0 {
		in.Priority = d.Priority
	}
	if in.AdvertInterval == 0 {
		in.AdvertInterval = d.AdvertInterval
	}
	if in.VRRPVersion == 0 {
		in.VRRPVersion = d.VRRPVersion
	}
	if in.AdvertInterval == 0 {
		in.AdvertInterval = 100 * time.Millisecond
		if in.VRRPVersion == 2 {
			in.AdvertInterval = time.Second
		}
	}
	if in.AuthPass == "" {
		in.AuthPass = d.AuthPass
	}
	if in.Checksum == "" {
		in.Checksum = d.Checksum
	}
	if in.NoPreempt == nil {
		in.NoPreempt = d.NoPreempt
	}
	if in.PreemptDelay == 0 {
		in.PreemptDelay = d.PreemptDelay
	}
	if in.UnicastSrc == "" {
		in.UnicastSrc = d.UnicastSrc
	}
	if len(in.UnicastPeers) == 0 {
		in.UnicastPeers = d.UnicastPeers
	}
	if in.Label == "" {
		in.Label = d.Label
	}
	if len(in.TrackIfaces) == 0 {
		in.TrackIfaces = d.TrackIfaces
	}
	return in
}

// resolveElection checks and copies what the election runs on: the interface, VRID,
// priority, version and advert interval, authentication, checksum and preemption delay.
func resolveElection(r *Resolved, in Instance, bad func(key, format string, args ...any)) {
	if in.Iface == "" {
		bad("iface", "is required (the interface that carries the adverts)")
	} else if len(in.Iface) > 15 || strings.ContainsAny(in.Iface, "/ ") {
		bad("iface", "%q is not an interface name", in.Iface)
	}
	if in.VRID < 1 || in.VRID > 255 {
		bad("vrid", "must be 1-255, got %d", in.VRID)
	}
	r.VRID = uint8(in.VRID)
	if r.Name == "" {
		r.Name = "vrid" + strconv.Itoa(in.VRID)
	}
	if in.Priority < 1 || in.Priority > 255 {
		bad("priority", "must be 1-255, got %d", in.Priority)
	}
	r.Priority = uint8(in.Priority)
	switch in.VRRPVersion {
	case 2, 3:
		r.Version = uint8(in.VRRPVersion)
		if _, err := vrrp.IntervalUnits(r.Version, in.AdvertInterval); err != nil {
			unit := "multiples of 10ms from 10ms to 40.95s"
			if r.Version == 2 {
				unit = "whole seconds from 1s to 255s"
			}
			bad("advert-interval", "VRRPv%d needs %s, got %s", r.Version, unit, in.AdvertInterval)
		}
	default:
		bad("version-vrrp", "must be 2 or 3, got %d", in.VRRPVersion)
	}
	r.Interval = in.AdvertInterval
	if in.AuthPass != "" {
		if in.VRRPVersion == 3 {
			bad("auth-pass", "VRRPv3 has no authentication (RFC 5798); use --version-vrrp 2 or drop auth-pass")
		} else if len(in.AuthPass) > 8 {
			bad("auth-pass", "is %d characters; VRRPv2 passwords have at most 8", len(in.AuthPass))
		}
	}
	mode, err := vrrp.ParseChecksumMode(in.Checksum)
	if err != nil {
		bad("checksum", "%v", err)
	}
	r.Checksum = mode
	if in.PreemptDelay < 0 {
		bad("preempt-delay", "must not be negative")
	}
}

// resolveVIPs parses the virtual addresses: the first one's family is the adverts' family.
func resolveVIPs(r *Resolved, in Instance, bad func(key, format string, args ...any)) {
	if len(in.VIPs) == 0 {
		bad("vip", "at least one virtual address is required, e.g. --vip 10.0.0.100/24")
	}
	var v4, v6 []netip.Prefix
	for i, v := range in.VIPs {
		pfx, err := netip.ParsePrefix(v)
		if err != nil || pfx.Addr().Zone() != "" {
			bad("vip."+strconv.Itoa(i), "%q is not an address in CIDR form like 10.0.0.100/24", v)
			continue
		}
		if i == 0 {
			r.IPv6 = pfx.Addr().Is6()
		}
		if pfx.Addr().Is4() {
			v4 = append(v4, pfx)
		} else {
			v6 = append(v6, pfx)
		}
	}
	// The first VIP's family is the family of the adverts; addresses of the other family
	// are bound and announced along, but not listed in the adverts (keepalived's
	// virtual_ipaddress_excluded).
	r.VIPs, r.ExtraVIPs = v4, v6
	if r.IPv6 {
		r.VIPs, r.ExtraVIPs = v6, v4
		if in.VRRPVersion == 2 {
			bad("version-vrrp", "VRRPv2 is IPv4 only; IPv6 adverts (first --vip is IPv6) need version 3")
		}
	}
	if len(r.VIPs) > 255 {
		bad("vip", "at most 255 addresses of one family per instance")
	}
}

// resolveUnicast parses the unicast source and peers, of the adverts' family.
func resolveUnicast(r *Resolved, in Instance, bad func(key, format string, args ...any)) {
	sameFamily := func(a netip.Addr) bool { return a.Is6() == r.IPv6 }
	family := "IPv4"
	if r.IPv6 {
		family = "IPv6"
	}
	if in.UnicastSrc != "" {
		a, err := netip.ParseAddr(in.UnicastSrc)
		if err != nil || !sameFamily(a) {
			bad("unicast-src", "%q is not an %s address (the family of the first --vip)", in.UnicastSrc, family)
		}
		r.UnicastSrc = a
	}
	for i, s := range in.UnicastPeers {
		a, err := netip.ParseAddr(s)
		if err != nil || !sameFamily(a) {
			bad("unicast-peer."+strconv.Itoa(i), "%q is not an %s address (the family of the first --vip)", s, family)
			continue
		}
		r.UnicastPeers = append(r.UnicastPeers, a)
	}
}

// Validate checks every value that can be checked without touching the host; a missing
// interface is reported when the daemon starts.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, config.FieldErrorf(key, format, args...)) }
	switch c.Mode {
	case "vrrp", "":
		_, err := c.Resolve()
		errs = append(errs, err)
	case "bgp":
		_, err := c.ResolveBGP()
		errs = append(errs, err)
	default:
		bad("mode", "must be vrrp or bgp, got %q", c.Mode)
	}
	errs = append(errs, c.StatusTLS.Validate())
	if c.GARPCount < 0 || c.GARPCount > 100 {
		bad("garp-count", "must be 0-100, got %d", c.GARPCount)
	}
	if c.GARPSpacing < 0 || c.GARPRepeatDelay < 0 || c.GARPRefresh < 0 {
		bad("garp-spacing", "GARP durations must not be negative")
	}
	if c.HandoverDrain < 0 {
		bad("handover-drain", "must not be negative, got %s", c.HandoverDrain)
	}
	if c.ConflictProbe < 0 || (c.ConflictProbe > 0 && c.ConflictProbe < 10*time.Millisecond) {
		bad("conflict-probe-interval", "must be 0 (off) or at least 10ms, got %s", c.ConflictProbe)
	}
	if c.VIPLifetime != 0 && c.VIPLifetime < time.Second {
		bad("vip-lifetime", "must be at least 1s (netlink lifetimes are whole seconds), got %s", c.VIPLifetime)
	}
	if c.CheckURL != "" || c.CheckExec != "" {
		if c.CheckInterval <= 0 {
			bad("check-interval", "must be positive")
		}
		if c.CheckTimeout <= 0 {
			bad("check-timeout", "must be positive")
		}
		if c.CheckRise < 1 {
			bad("check-rise", "must be at least 1")
		}
		if c.CheckFall < 1 {
			bad("check-fall", "must be at least 1")
		}
	}
	if c.CheckURL != "" {
		if s, _, ok := strings.Cut(c.CheckURL, "://"); !ok || (s != "https" && s != "http" && s != "tcp") {
			bad("check-url", "%q: want https://host:port/path, http://... or tcp://host:port", c.CheckURL)
		}
	}
	switch c.CheckAction {
	case "weight":
		if c.CheckWeight < -254 || c.CheckWeight > 254 {
			bad("check-weight", "must be -254 to 254, got %d", c.CheckWeight)
		}
	case "fault":
	default:
		bad("check-action", "must be weight or fault, got %q", c.CheckAction)
	}
	if c.FlapMax < 0 {
		bad("flap-max", "must not be negative")
	}
	if c.FlapMax > 0 && (c.FlapWindow <= 0 || c.FlapHold <= 0) {
		bad("flap-window", "flap-window and flap-hold must be positive when flap-max is set")
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return errors.Join(errs...)
}

// ResolvedBGP is the BGP mode's configuration, parsed.
type ResolvedBGP struct {
	Speaker     bgp.Config     // RouterID may be zero: chosen on the host by New
	VIPs        []netip.Prefix // host routes (/32, /128) to announce
	Iface       string         // where the addresses are bound while announced
	TrackIfaces []string
	StopGrace   time.Duration   // SIGTERM: withdrawn, then this long before the sessions close
	BFD         *bfd.Timers     // nil: no BFD
	Leader      *LeaderElection // nil: anycast
}

// LeaderElection is bgp-announce: leader's settings, checked.
type LeaderElection struct {
	Kubeconfig    string
	Server        string // replaces the kubeconfig's server when set
	Namespace     string
	Name          string
	Identity      string // empty: the host name, filled in by New
	Duration      time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// ResolveBGP parses the BGP mode's settings; the errors are config.FieldErrors.
func (c *Config) ResolveBGP() (ResolvedBGP, error) {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, config.FieldErrorf(key, format, args...)) }
	b := c.BGPConfig
	r := ResolvedBGP{Iface: b.BGPIface, TrackIfaces: c.TrackIfaces}
	if len(c.Instances) > 0 {
		bad("instances", "BGP mode has no VRRP instances; list the addresses with vip")
	}
	source := resolveSpeaker(&r, b, bad)
	resolvePeers(&r, b, source, bad)
	resolveAnnouncement(&r, b, bad)
	resolveBFD(&r, b, bad)
	r.VIPs = resolveHostRoutes(c.VIPs, bad)
	return r, errors.Join(errs...)
}

// resolveSpeaker checks and copies the speaker's own settings (AS, router ID, timers, listen
// port) and returns the source address peers are dialed from (invalid: the kernel's choice).
func resolveSpeaker(r *ResolvedBGP, b BGPConfig, bad func(key, format string, args ...any)) netip.Addr {
	if b.BGPAS == "" {
		bad("bgp-as", "is required in BGP mode (this host's AS number, e.g. 65001)")
	} else if as, err := bgp.ParseAS(b.BGPAS); err != nil {
		bad("bgp-as", "%q: must be 1 to 4294967295 (or asdot like 1.10), not 23456", b.BGPAS)
	} else {
		r.Speaker.AS = as
	}
	if b.BGPRouterID != "" {
		a, err := netip.ParseAddr(b.BGPRouterID)
		if err != nil || !a.Is4() {
			bad("bgp-router-id", "%q is not an IPv4 address (the router ID is written as one)", b.BGPRouterID)
		}
		r.Speaker.RouterID = a
	}
	if b.BGPMultihop < 0 || b.BGPMultihop > 255 {
		bad("bgp-multihop", "must be a TTL of 0-255, got %d", b.BGPMultihop)
	}
	var source netip.Addr
	if b.BGPSource != "" {
		a, err := netip.ParseAddr(b.BGPSource)
		if err != nil || a.Zone() != "" {
			bad("bgp-source", "%q is not an IP address", b.BGPSource)
		}
		source = a
	}
	if b.BGPHoldTime%time.Second != 0 || b.BGPHoldTime < 3*time.Second || b.BGPHoldTime > 65535*time.Second {
		bad("bgp-hold-time", "must be whole seconds from 3s to 65535s (RFC 4271), got %s", b.BGPHoldTime)
	}
	if b.BGPKeepalive%time.Second != 0 || b.BGPKeepalive < time.Second || b.BGPKeepalive >= b.BGPHoldTime {
		bad("bgp-keepalive", "must be whole seconds, at least 1s and below bgp-hold-time (%s), got %s", b.BGPHoldTime, b.BGPKeepalive)
	}
	if b.BGPConnectRetry < time.Second {
		bad("bgp-connect-retry", "must be at least 1s, got %s", b.BGPConnectRetry)
	}
	r.Speaker.ConnectRetry = b.BGPConnectRetry
	if b.BGPListenPort < 0 || b.BGPListenPort > 65535 {
		bad("bgp-listen-port", "must be a TCP port 0-65535 (0: do not listen), got %d", b.BGPListenPort)
	}
	r.Speaker.ListenPort = uint16(b.BGPListenPort)
	return source
}

// resolvePeers parses the peers, each with the session settings.
func resolvePeers(r *ResolvedBGP, b BGPConfig, source netip.Addr, bad func(key, format string, args ...any)) {
	if len(b.BGPPeers) == 0 {
		bad("bgp-peer", "at least one peer is required in BGP mode, e.g. --bgp-peer 10.0.0.1:65000")
	}
	for i, s := range b.BGPPeers {
		p, err := bgp.ParsePeer(s)
		if err != nil {
			bad("bgp-peer."+strconv.Itoa(i), "%v", strings.TrimPrefix(err.Error(), "bgp: "))
			continue
		}
		p.Multihop = uint8(max(0, min(255, b.BGPMultihop)))
		if source.IsValid() && source.Is4() == p.Addr.Is4() {
			p.Source = source
		}
		p.HoldTime, p.Keepalive = b.BGPHoldTime, b.BGPKeepalive
		for _, q := range r.Speaker.Peers {
			if q.Addr == p.Addr {
				bad("bgp-peer."+strconv.Itoa(i), "peer %s is listed twice", p.Addr)
			}
		}
		r.Speaker.Peers = append(r.Speaker.Peers, p)
	}
}

// resolveBFD checks the BFD settings; sessions are single-hop only.
func resolveBFD(r *ResolvedBGP, b BGPConfig, bad func(key, format string, args ...any)) {
	if !b.BFD {
		return
	}
	if b.BGPMultihop > 0 {
		bad("bfd", "is single-hop (RFC 5881: packets must arrive with TTL 255); it cannot run with bgp-multihop")
	}
	if b.BFDInterval < 10*time.Millisecond || b.BFDInterval > time.Minute {
		bad("bfd-interval", "must be 10ms to 1m, got %s", b.BFDInterval)
	}
	if b.BFDMultiplier < 2 || b.BFDMultiplier > 255 {
		bad("bfd-multiplier", "must be 2 to 255, got %d", b.BFDMultiplier)
	}
	r.BFD = &bfd.Timers{DesiredMinTx: b.BFDInterval, RequiredMinRx: b.BFDInterval, DetectMult: uint8(max(0, min(255, b.BFDMultiplier)))}
}

// resolveAnnouncement checks and copies what is announced how: next hop, communities, the
// announce mode (with the leader election), the interface and the stop grace.
func resolveAnnouncement(r *ResolvedBGP, b BGPConfig, bad func(key, format string, args ...any)) {
	if b.BGPNextHop != "" {
		a, err := netip.ParseAddr(b.BGPNextHop)
		if err != nil || a.Zone() != "" {
			bad("bgp-next-hop", "%q is not an IP address", b.BGPNextHop)
		}
		r.Speaker.NextHop = a
	}
	for i, s := range b.BGPCommunities {
		v, err := bgp.ParseCommunity(s)
		if err != nil {
			bad("bgp-community."+strconv.Itoa(i), "%v", strings.TrimPrefix(err.Error(), "bgp: "))
			continue
		}
		r.Speaker.Communities = append(r.Speaker.Communities, v)
	}
	switch b.BGPAnnounce {
	case "anycast", "all":
	case "leader":
		r.Leader = resolveLeader(b, bad)
	default:
		bad("bgp-announce", "must be anycast or leader, got %q", b.BGPAnnounce)
	}
	if b.BGPIface == "" || len(b.BGPIface) > 15 || strings.ContainsAny(b.BGPIface, "/ ") {
		bad("bgp-iface", "%q is not an interface name", b.BGPIface)
	}
	if b.BGPStopGrace < 0 || b.BGPStopGrace > time.Minute {
		bad("bgp-stop-grace", "must be 0 to 1m, got %s", b.BGPStopGrace)
	}
	r.StopGrace = b.BGPStopGrace
}

// resolveHostRoutes parses the addresses to announce into host routes.
func resolveHostRoutes(vips []string, bad func(key, format string, args ...any)) []netip.Prefix {
	var routes []netip.Prefix
	if len(vips) == 0 {
		bad("vip", "at least one address to announce is required, e.g. --vip 10.0.0.100/32")
	}
	for i, v := range vips {
		a, err := netip.ParseAddr(v)
		if err != nil {
			var pfx netip.Prefix
			if pfx, err = netip.ParsePrefix(v); err == nil {
				a = pfx.Addr()
			}
		}
		if err != nil || a.Zone() != "" {
			bad("vip."+strconv.Itoa(i), "%q is not an address like 10.0.0.100 or 10.0.0.100/32", v)
			continue
		}
		// Whatever the prefix length given, what is announced and bound is the
		// address's host route.
		routes = append(routes, bgp.HostRoute(a))
	}
	return routes
}

// resolveLeader checks the Lease settings of bgp-announce: leader.
func resolveLeader(b BGPConfig, bad func(key, format string, args ...any)) *LeaderElection {
	le := &LeaderElection{Kubeconfig: b.Kubeconfig, Server: b.LeaseServer, Namespace: b.LeaseNamespace, Name: b.LeaseName,
		Identity: b.LeaseIdentity, Duration: b.LeaseDuration, RenewDeadline: b.LeaseRenewDeadline, RetryPeriod: b.LeaseRetryPeriod}
	if b.Kubeconfig == "" {
		bad("kubeconfig", "is required with bgp-announce: leader (the apiserver holding the Lease, e.g. /etc/kubernetes/admin.conf)")
	}
	if s := b.LeaseServer; s != "" {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("lease-server", "%q is not a URL like https://127.0.0.1:6443", s)
		}
	}
	for key, v := range map[string]string{"lease-namespace": b.LeaseNamespace, "lease-name": b.LeaseName} {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			bad(key, "%q: %s", v, strings.Join(msgs, "; "))
		}
	}
	if len(b.LeaseIdentity) > 253 {
		bad("lease-identity", "is longer than 253 characters")
	}
	if b.LeaseRetryPeriod <= 0 {
		bad("lease-retry-period", "must be positive, got %s", b.LeaseRetryPeriod)
	}
	if b.LeaseRenewDeadline <= b.LeaseRetryPeriod*6/5 || b.LeaseRenewDeadline >= b.LeaseDuration {
		bad("lease-renew-deadline", "must be above 1.2 x lease-retry-period (%s) and below lease-duration (%s), got %s", b.LeaseRetryPeriod, b.LeaseDuration, b.LeaseRenewDeadline)
	}
	if b.LeaseDuration%time.Second != 0 || b.LeaseDuration < time.Second {
		bad("lease-duration", "must be whole seconds (the Lease's leaseDurationSeconds), got %s", b.LeaseDuration)
	}
	return le
}
