// Package vip runs VRRP virtual routers on a Linux host: the raw IP protocol 112 socket
// (multicast 224.0.0.18 or unicast peers), netlink binding of the virtual addresses with a
// self-expiring lifetime, gratuitous ARP and unsolicited NA, health and interface tracking,
// and the /status and /metrics endpoints. The protocol itself is package vrrp.
package vip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/hacp/hacp/pkg/health"
)

// Daemon runs every configured instance.
type Daemon struct {
	log     *slog.Logger
	metrics *metrics

	httpOK, execOK atomic.Bool
	nftMissing     atomic.Bool // logged once
	checker        atomic.Pointer[health.Checker]
	links          sync.Map // iface name -> bool (up and running)

	snapshot atomic.Pointer[[]*runningInstance]

	mu       sync.Mutex
	cfg      *Config
	insts    []*runningInstance
	runCtx   context.Context
	checkCtl context.CancelFunc
	wg       sync.WaitGroup
	statusLn net.Listener
	tlsLn    net.Listener // --status-tls-addr

	bgp *bgpRunner // BGP mode; nil in VRRP mode
}

type runningInstance struct {
	*instance
	cancel context.CancelFunc
}

// Status is the /status document.
type Status struct {
	Instances []InstanceStatus `json:"instances"`
	Healthy   bool             `json:"healthy"`
	Check     *health.Status   `json:"check,omitempty"`
	Mode      string           `json:"mode"`
	BGP       *BGPStatus       `json:"bgp,omitempty"`
	// Conflict is true while any instance sees another holder of one of its VIPs.
	Conflict bool `json:"conflict"`
}

// New checks cfg against the host (interfaces, addresses) and opens the instances'
// sockets; Run starts them.
func New(cfg *Config, log *slog.Logger) (*Daemon, error) {
	d := &Daemon{log: log, metrics: newMetrics(), cfg: cfg}
	d.registerCertMetrics()
	d.httpOK.Store(true)
	d.execOK.Store(true)
	if err := d.readLinks(); err != nil {
		return nil, err
	}
	if cfg.Mode == "bgp" {
		b, err := newBGPRunner(d, cfg)
		if err != nil {
			return nil, err
		}
		d.bgp = b
		d.metrics.reg.MustRegister(bgpPeerCollector{b}, d.metrics.announced)
		if b.elector != nil {
			d.metrics.reg.MustRegister(d.metrics.leader)
		}
		if err := d.listenStatus(); err != nil {
			return nil, err
		}
		return d, nil
	}
	rs, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		for _, t := range r.TrackIfaces {
			if _, err := net.InterfaceByName(t); err != nil {
				d.closeAll()
				return nil, fmt.Errorf("vip: instance %s: there is no interface %q on this host (check --track-iface)", r.Name, t)
			}
		}
		in, err := newInstance(d, cfg, r)
		if err != nil {
			d.closeAll()
			return nil, err
		}
		d.insts = append(d.insts, &runningInstance{instance: in})
	}
	d.setInstances(d.insts)
	if err := d.listenStatus(); err != nil {
		d.closeAll()
		return nil, err
	}
	return d, nil
}

func (d *Daemon) listenStatus() error {
	if d.cfg.StatusAddr == "" {
		var err error
		if d.tlsLn, err = d.cfg.StatusTLS.Listen(); err != nil {
			return fmt.Errorf("vip: %w", err)
		}
		return nil
	}
	ln, err := net.Listen("tcp", d.cfg.StatusAddr)
	if err != nil {
		return fmt.Errorf("vip: listen on --status-addr %s: %w", d.cfg.StatusAddr, err)
	}
	d.statusLn = ln
	if d.tlsLn, err = d.cfg.StatusTLS.Listen(); err != nil {
		ln.Close()
		return fmt.Errorf("vip: %w", err)
	}
	return nil
}

func (d *Daemon) closeAll() {
	for _, ri := range d.insts {
		ri.conn.Close()
		ri.ann.Close()
		ri.cw.probe.Close()
	}
}

// StatusAddr returns the address the status server listens on, or "".
func (d *Daemon) StatusAddr() string {
	if d.statusLn == nil {
		return ""
	}
	return d.statusLn.Addr().String()
}

// StatusTLSAddr returns the address the TLS status server listens on, or "".
func (d *Daemon) StatusTLSAddr() string {
	if d.tlsLn == nil {
		return ""
	}
	return d.tlsLn.Addr().String()
}

// Run runs until ctx ends, then stops every instance (a master sends a priority 0 advert
// and removes its addresses) and returns.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var srv, tlsSrv *http.Server
	if d.statusLn != nil {
		srv = &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(d.statusLn) }()
	}
	if d.tlsLn != nil {
		tlsSrv = &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = tlsSrv.Serve(d.tlsLn) }()
		defer tlsSrv.Close()
	}
	linkCtx, stopLinks := context.WithCancel(ctx)
	defer stopLinks()
	if err := d.watchLinks(linkCtx); err != nil {
		return err
	}
	d.mu.Lock()
	d.runCtx = ctx
	d.startChecks(d.cfg)
	for _, ri := range d.insts {
		d.start(ri)
	}
	d.mu.Unlock()

	var runErr error
	if d.bgp != nil {
		// run returns once the routes are withdrawn, or at once if the speaker could
		// not start.
		if runErr = d.bgp.run(ctx); runErr != nil {
			cancel()
		}
	}
	<-ctx.Done()
	d.wg.Wait() // every instance has run its shutdown
	d.mu.Lock()
	if d.checkCtl != nil {
		d.checkCtl()
	}
	d.mu.Unlock()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return runErr
}

// start runs ri; d.mu must be held.
func (d *Daemon) start(ri *runningInstance) {
	ctx, cancel := context.WithCancel(d.runCtx)
	ri.cancel = cancel
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ri.run(ctx)
	}()
}

// Reload applies a new configuration: instances whose settings did not change keep running;
// changed ones are stopped (a master hands over with a priority 0 advert) and started again;
// removed ones stop; new ones start. Health check settings take effect at once.
func (d *Daemon) Reload(cfg *Config) error {
	if d.bgp != nil || cfg.Mode == "bgp" {
		return d.reloadBGP(cfg)
	}
	rs, err := cfg.Resolve()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runCtx == nil {
		return errors.New("vip: reload before Run")
	}
	if err := d.readLinks(); err != nil {
		return err
	}
	globalsChanged := !reflect.DeepEqual(globals(d.cfg), globals(cfg))
	old := map[string]*runningInstance{}
	for _, ri := range d.insts {
		old[ri.r.Name] = ri
	}
	var keep []*runningInstance
	var stop []*runningInstance
	var start []Resolved
	for _, r := range rs {
		if ri, ok := old[r.Name]; ok && !globalsChanged && reflect.DeepEqual(ri.r, r) {
			keep = append(keep, ri)
			delete(old, r.Name)
			continue
		}
		start = append(start, r)
	}
	for _, ri := range old {
		stop = append(stop, ri)
	}
	for _, ri := range stop {
		ri.cancel()
		<-ri.done
	}
	var errs []error
	for _, r := range start {
		in, err := newInstance(d, cfg, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ri := &runningInstance{instance: in}
		d.start(ri)
		keep = append(keep, ri)
	}
	d.setInstances(keep)
	if !reflect.DeepEqual(checks(d.cfg), checks(cfg)) {
		d.startChecks(cfg)
	}
	d.cfg = cfg
	d.log.Info("reloaded", "instances", len(keep), "restarted", len(start), "stopped", len(stop))
	return errors.Join(errs...)
}

// reloadBGP applies the health check settings of cfg; anything else of the BGP mode needs
// a restart (which withdraws the routes first).
func (d *Daemon) reloadBGP(cfg *Config) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runCtx == nil {
		return errors.New("vip: reload before Run")
	}
	if d.bgp == nil || cfg.Mode != "bgp" {
		return errors.New("vip: --mode cannot change on reload; restart vipd")
	}
	if _, err := cfg.ResolveBGP(); err != nil {
		return err
	}
	if !reflect.DeepEqual(cfg.BGPConfig, d.cfg.BGPConfig) || !reflect.DeepEqual(cfg.VIPs, d.cfg.VIPs) || !reflect.DeepEqual(cfg.TrackIfaces, d.cfg.TrackIfaces) {
		return errors.New("vip: BGP mode reloads only the health check settings; restart vipd to change addresses, peers or BGP settings")
	}
	if !reflect.DeepEqual(checks(d.cfg), checks(cfg)) {
		d.startChecks(cfg)
	}
	d.cfg = cfg
	d.log.Info("reloaded health check settings")
	return nil
}

// globals returns the daemon-wide settings other than the instances and the checks.
func globals(c *Config) []any {
	return []any{c.GARPCount, c.GARPSpacing, c.GARPRepeatDelay, c.GARPRefresh, c.VIPLifetime, c.Notify,
		c.FlapMax, c.FlapWindow, c.FlapHold, c.CheckAction, c.CheckWeight, c.HandoverTimeout, c.HandoverDrain, c.HandoverForward,
		c.ConflictProbe, c.YieldOnConflict}
}

func checks(c *Config) []any {
	return []any{c.CheckURL, c.CheckInterval, c.CheckTimeout, c.CheckRise, c.CheckFall, c.CheckCAFile, c.CheckInsecure, c.CheckExec}
}

// startChecks (re)starts the health checks of cfg; d.mu must be held.
func (d *Daemon) startChecks(cfg *Config) {
	if d.checkCtl != nil {
		d.checkCtl()
	}
	ctx, cancel := context.WithCancel(d.runCtx)
	d.checkCtl = cancel
	d.httpOK.Store(true)
	d.execOK.Store(true)
	d.checker.Store(nil)
	if cfg.CheckURL != "" {
		hc := health.Config{
			URL: cfg.CheckURL, Interval: cfg.CheckInterval, Timeout: cfg.CheckTimeout,
			Rise: cfg.CheckRise, Fall: cfg.CheckFall, CAFile: cfg.CheckCAFile,
			Insecure: cfg.CheckInsecure && cfg.CheckCAFile == "", InitiallyHealthy: true,
		}
		c, err := health.New(hc, func(ok bool, reason error) {
			if ctx.Err() != nil {
				return
			}
			msg := ""
			if reason != nil {
				msg = reason.Error()
			}
			d.log.Info("health check changed", "url", cfg.CheckURL, "healthy", ok, "reason", msg)
			d.httpOK.Store(ok)
			d.healthChanged()
		})
		if err != nil {
			d.log.Error("health check disabled", "err", err.Error())
		} else {
			d.checker.Store(c)
			go c.Run(ctx)
		}
	}
	if cfg.CheckExec != "" {
		go d.runExecCheck(ctx, cfg)
	}
	d.healthChanged()
}

// runExecCheck runs --check-exec every interval with rise/fall hysteresis.
func (d *Daemon) runExecCheck(ctx context.Context, cfg *Config) {
	f := strings.Fields(cfg.CheckExec)
	ok, streak := true, 0
	t := time.NewTicker(cfg.CheckInterval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, cfg.CheckTimeout)
		err := exec.CommandContext(cctx, f[0], f[1:]...).Run()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if (err == nil) == ok {
			streak = 0
		} else {
			streak++
			need := cfg.CheckFall
			if !ok {
				need = cfg.CheckRise
			}
			if streak >= need {
				ok, streak = !ok, 0
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				d.log.Info("exec check changed", "cmd", cfg.CheckExec, "healthy", ok, "reason", msg)
				d.execOK.Store(ok)
				d.healthChanged()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Daemon) healthy() bool { return d.httpOK.Load() && d.execOK.Load() }

func (d *Daemon) healthChanged() {
	v := 0.0
	if d.healthy() {
		v = 1
	}
	d.metrics.healthy.Set(v)
	d.wakeAll()
}

// wakeAll asks every instance to look at link and health state again; it does not take
// d.mu, so it may be called with or without it.
func (d *Daemon) wakeAll() {
	if d.bgp != nil {
		d.bgp.wake()
	}
	if p := d.snapshot.Load(); p != nil {
		for _, ri := range *p {
			ri.wake()
		}
	}
}

// setInstances replaces the instance list; d.mu must be held.
func (d *Daemon) setInstances(list []*runningInstance) {
	d.insts = list
	cp := append([]*runningInstance(nil), list...)
	d.snapshot.Store(&cp)
}

func linkRunning(l netlink.Link) bool {
	f := l.Attrs().RawFlags
	return f&unix.IFF_UP != 0 && f&unix.IFF_RUNNING != 0
}

func (d *Daemon) readLinks() error {
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("vip: list interfaces: %w", err)
	}
	for _, l := range links {
		d.links.Store(l.Attrs().Name, linkRunning(l))
	}
	return nil
}

func (d *Daemon) linkUp(name string) bool {
	v, ok := d.links.Load(name)
	return ok && v.(bool)
}

// watchLinks follows link state changes with a netlink subscription.
func (d *Daemon) watchLinks(ctx context.Context) error {
	ch := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	err := netlink.LinkSubscribeWithOptions(ch, done, netlink.LinkSubscribeOptions{
		// The state read in New may be stale by now: a link that came up (or went down)
		// between New and Run would otherwise never be seen. ListExisting replays every
		// link's current state through the subscription.
		ListExisting: true,
		ErrorCallback: func(err error) {
			if ctx.Err() == nil {
				d.log.Error("link watch", "err", err.Error())
			}
		},
	})
	if err != nil {
		return fmt.Errorf("vip: subscribe to link changes: %w", err)
	}
	go func() {
		<-ctx.Done()
		close(done)
	}()
	go func() {
		for u := range ch {
			name := u.Attrs().Name
			up := linkRunning(u.Link) && u.Header.Type != unix.RTM_DELLINK
			prev, _ := d.links.Swap(name, up)
			if prev == nil || prev.(bool) != up {
				d.log.Info("link changed", "iface", name, "up", up)
				d.wakeAll()
			}
		}
	}()
	return nil
}

// Status returns a snapshot of every instance and the health checks.
func (d *Daemon) Status() Status {
	d.mu.Lock()
	insts := append([]*runningInstance(nil), d.insts...)
	d.mu.Unlock()
	st := Status{Healthy: d.healthy(), Instances: []InstanceStatus{}, Mode: "vrrp"}
	for _, ri := range insts {
		in := ri.status()
		st.Conflict = st.Conflict || in.Conflict
		st.Instances = append(st.Instances, in)
	}
	if d.bgp != nil {
		st.Mode, st.BGP = "bgp", d.bgp.status()
	}
	if c := d.checker.Load(); c != nil {
		s := c.Status()
		st.Check = &s
	}
	return st
}

// Handler serves /status and /metrics.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(d.Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}
