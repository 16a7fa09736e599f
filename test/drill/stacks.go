package main

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// Ports and VRRP settings shared by every stack.
const (
	apiPort = 6443
	lbPort  = 8443
	// syncPort is where the hacp stack's lbproxies exchange connection tables.
	syncPort = 8444
	vrid     = 51
)

// priorities of m1, m2, m3: m1 holds the VIP when everything is healthy.
var priorities = []int{101, 100, 99}

// stackSpec is one way of putting the VIP and the balancer in front of the same three
// apiservers.
type stackSpec struct {
	Name   string
	HACP   bool
	Advert time.Duration // VRRP advert interval

	// BGP: vipd in BGP mode announces the VIP (bgpVIPAddr, on no subnet) from every
	// healthy master to the router namespace's FRR, which routes the client's connections
	// over them with ECMP.
	BGP       bool
	HoldTime  time.Duration
	Keepalive time.Duration
	// BFDInterval and BFDMultiplier: vipd's --bfd and the router's bfdd profile for its
	// neighbours (zero interval: no BFD, the hold timer alone).
	BFDInterval   time.Duration
	BFDMultiplier int
	// ShutdownDelay is the apiserver's --shutdown-delay in this stack unless
	// --apiserver-shutdown-delay is given (0: the apiserver's default, 1s).
	ShutdownDelay time.Duration
	// DownSessionGrace is lbproxy's --down-session-grace (hacp stacks; 0: its default).
	DownSessionGrace time.Duration
	// ConnSync turns on lbproxy's connection-table sync between the masters (--sync-listen,
	// --sync-peer): the VRRP hacp stack, where one master at a time holds the VIP.
	ConnSync bool

	// anchor only
	VRRPVersion   int
	AuthPass      string
	CheckInterval int // keepalived vrrp_script interval, seconds (keepalived's minimum is 1)
	CheckFall     int
	CheckRise     int
	HAInter       string // haproxy check interval
	HAFastInter   string
	HAFall        int
	HARise        int
	HACheckTO     string
	HAConnectTO   string
	HARetries     int
}

// guideStack is keepalived + haproxy exactly as the kubeadm HA guide configures them.
func guideStack() stackSpec {
	return stackSpec{
		Name: stackAnchor, Advert: time.Second,
		VRRPVersion: 2, AuthPass: "hacpdril", // PASS auth: at most 8 characters
		CheckInterval: 3, CheckFall: 10, CheckRise: 2,
		HAInter: "2s", HAFall: 3, HARise: 2, HACheckTO: "10s", HAConnectTO: "5s", HARetries: 1,
	}
}

// tunedStack is the guide's architecture with the timers of hacp's defaults: VRRPv3 at
// hacp's advert interval, haproxy's checks, connect timeout and retries as lbproxy's
// defaults. vipd's check defaults (every 1 s, fall 2, rise 2) are also keepalived's
// shortest vrrp_script interval, so the tuned check script matches them exactly; it still
// goes through the local haproxy, as in the guide.
func tunedStack(advert time.Duration) stackSpec {
	return stackSpec{
		Name: stackAnchorTuned, Advert: advert,
		VRRPVersion:   3,
		CheckInterval: 1, CheckFall: 2, CheckRise: 2,
		HAInter: "2s", HAFastInter: "500ms", HAFall: 2, HARise: 2, HACheckTO: "1s", HAConnectTO: "300ms", HARetries: 2,
	}
}

// hacpStack is vipd + lbproxy with the settings deploy/ansible gives them: the apiservers'
// --shutdown-delay 5s and lbproxy's --down-session-grace 2s, so that a draining apiserver
// finishes what the other masters' lbproxies sent it before their checks mark it DOWN.
func hacpStack(advert time.Duration) stackSpec {
	return stackSpec{Name: stackHACP, HACP: true, Advert: advert, ShutdownDelay: 5 * time.Second, DownSessionGrace: 2 * time.Second, ConnSync: true}
}

// bgpStack is vipd's BGP mode with its default timers (FRR's datacenter profile: hold 9 s,
// keepalive 3 s) behind lbproxy with its defaults, and BFD at 100 ms x 3 on both sides
// (the router's bfdd; FRR's default is 300 ms x 3, 100 ms is what a software BFD on a
// datacenter router does for a few dozen peers).
func bgpStack() stackSpec {
	return stackSpec{Name: stackHACPBGP, HACP: true, BGP: true, HoldTime: 9 * time.Second, Keepalive: 3 * time.Second,
		BFDInterval: 100 * time.Millisecond, BFDMultiplier: 3,
		// Anycast: every other master's lbproxy still sends m1's apiserver requests after
		// m1's route is withdrawn, until its checks (fall 2 x 1 s) find /healthz failing;
		// the apiserver must keep serving that long (see docs/drill.md's hacp-bgp numbers),
		// and their lbproxies must let the requests in flight to it finish when their
		// checks mark it DOWN instead of cutting them.
		ShutdownDelay: 5 * time.Second, DownSessionGrace: 2 * time.Second}
}

// stackSpecs are the stacks by name.
func stackSpecs(advert time.Duration) map[string]stackSpec {
	return map[string]stackSpec{
		stackHACP:        hacpStack(advert),
		stackAnchor:      guideStack(),
		stackAnchorTuned: tunedStack(advert),
		stackHACPBGP:     bgpStack(),
	}
}

// describe says in one line how the stack is configured, for report.md.
func (s stackSpec) describe() string {
	if s.BGP {
		bfd := "no BFD"
		if s.BFDInterval > 0 {
			bfd = fmt.Sprintf("BFD %v x %d with the router's bfdd, vipd also listening on port 179", s.BFDInterval, s.BFDMultiplier)
		}
		return fmt.Sprintf("vipd in BGP mode (every healthy master announces %s/32 to FRR %s on the router %s, hold %v, keepalive %v, %s, tracking the local apiserver /healthz; the router spreads connections with ECMP, hashing on ports) + lbproxy; graceful stops vipd first (it withdraws, waits its 1 s grace, exits), then the rest; apiserver --shutdown-delay %v unless --apiserver-shutdown-delay; lbproxy --down-session-grace %v",
			bgpVIPAddr, frrVersion(), routerAddr, s.HoldTime, s.Keepalive, bfd, s.ShutdownDelay, s.DownSessionGrace)
	}
	if s.HACP {
		sync := ""
		if s.ConnSync {
			sync = fmt.Sprintf(", connection-table sync with the other masters on UDP %d", syncPort)
		}
		return fmt.Sprintf("vipd (VRRPv3, %v adverts, checking /healthz through the local lbproxy, make-before-break handover) + lbproxy (--down-session-grace %v%s); apiserver --shutdown-delay %v unless --apiserver-shutdown-delay (as deploy/ansible); graceful stops vipd first (it hands over and exits), then the rest, as the systemd units order them",
			s.Advert, s.DownSessionGrace, sync, s.ShutdownDelay)
	}
	auth := "no auth"
	if s.AuthPass != "" {
		auth = "PASS auth"
	}
	fast := ""
	if s.HAFastInter != "" {
		fast = " fastinter " + s.HAFastInter
	}
	return fmt.Sprintf("keepalived (VRRPv%d, %s, %v adverts, check script curl https://localhost:%d/healthz every %ds fall %d rise %d weight -2) + haproxy (tcp, httpchk GET /healthz over TLS, inter %s%s fall %d rise %d, timeout check %s, timeout connect %s, retries %d, redispatch)",
		s.VRRPVersion, auth, s.Advert, lbPort, s.CheckInterval, s.CheckFall, s.CheckRise, s.HAInter, fast, s.HAFall, s.HARise, s.HACheckTO, s.HAConnectTO, s.HARetries)
}

type backendTmpl struct{ Name, Addr string }

// renderAnchor writes keepalived.conf, the check script and haproxy.cfg for master i into
// dir and returns their paths.
func (s stackSpec) renderAnchor(dir string, i int, m *host, masters []*host) (kaConf, haConf string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	render := func(name, path string, mode os.FileMode, data any) error {
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, name, data); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		return os.WriteFile(path, b.Bytes(), mode)
	}
	script := filepath.Join(dir, "check_apiserver.sh")
	if err := render("check_apiserver.sh.tmpl", script, 0o700, map[string]any{
		"Port": lbPort, "MaxTime": max(1, min(2, s.CheckInterval)),
	}); err != nil {
		return "", "", err
	}
	state := "BACKUP"
	if i == 0 {
		state = "MASTER"
	}
	kaConf = filepath.Join(dir, "keepalived.conf")
	if err := render("keepalived.conf.tmpl", kaConf, 0o600, map[string]any{
		"Comment":       s.Name + " on " + m.Name,
		"RouterID":      "hd_" + m.Name,
		"VRRPVersion":   s.VRRPVersion,
		"CheckScript":   script,
		"CheckInterval": s.CheckInterval,
		"Fall":          s.CheckFall,
		"Rise":          s.CheckRise,
		"State":         state,
		"Iface":         m.Iface,
		"VRID":          vrid,
		"Priority":      priorities[i],
		"AdvertInt":     strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", s.Advert.Seconds()), "0"), "."),
		"AuthPass":      s.AuthPass,
		"VIP":           vipAddr + "/24",
	}); err != nil {
		return "", "", err
	}
	var backends []backendTmpl
	for _, o := range masters {
		backends = append(backends, backendTmpl{Name: o.Name, Addr: fmt.Sprintf("%s:%d", o.Addr, apiPort)})
	}
	haConf = filepath.Join(dir, "haproxy.cfg")
	if err := render("haproxy.cfg.tmpl", haConf, 0o600, map[string]any{
		"Comment":        s.Name + " on " + m.Name,
		"PIDFile":        filepath.Join(dir, "haproxy.pid"),
		"Retries":        s.HARetries,
		"ConnectTimeout": s.HAConnectTO,
		"CheckTimeout":   s.HACheckTO,
		"Port":           lbPort,
		"Inter":          s.HAInter,
		"FastInter":      s.HAFastInter,
		"Fall":           s.HAFall,
		"Rise":           s.HARise,
		"Backends":       backends,
	}); err != nil {
		return "", "", err
	}
	return kaConf, haConf, nil
}
