package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Timing of a scenario's recording window.
type windows struct {
	Before    time.Duration // writes recorded before the fault
	MinAfter  time.Duration // least recording after the fault
	Quiet     time.Duration // recording ends once this long has passed without a failed write
	MaxAfter  time.Duration // most recording after the fault
	Partition time.Duration // how long partition-master keeps the master cut off
}

func defaultWindows(quick bool) windows {
	if quick {
		return windows{Before: time.Second, MinAfter: 3 * time.Second, Quiet: 2 * time.Second, MaxAfter: 20 * time.Second, Partition: 4 * time.Second}
	}
	return windows{Before: 2 * time.Second, MinAfter: 5 * time.Second, Quiet: 3 * time.Second, MaxAfter: 45 * time.Second, Partition: 6 * time.Second}
}

// session records one scenario: the writer through the VIP, the VIP sampler and the probes,
// all running until stop is called.
type session struct {
	c      *cluster
	run    string
	rec    recorder
	cancel context.CancelFunc
	wg     sync.WaitGroup

	lastFail time.Duration
	lastAck  time.Duration
	done     bool
	mu       sync.Mutex
}

// record starts a session: the writer (and, with the aggregated API, the flunder writer)
// through the VIP, the VIP sampler and the TLS probes of the VIP.
func (c *cluster) record(ctx context.Context, run string) *session {
	ctx, cancel := context.WithCancel(ctx)
	s := &session{c: c, run: run, cancel: cancel}
	if c.ext.flunders {
		s.wg.Go(func() { s.writeFlunders(ctx) })
	}
	s.wg.Go(func() { s.write(ctx) })
	s.wg.Go(func() { s.sampleVIP(ctx) })
	s.wg.Go(func() { s.probeVIP(ctx) })
	return s
}

// writeFlunders creates flunders through the VIP every 100 ms until ctx ends.
func (s *session) writeFlunders(ctx context.Context) {
	c := s.c
	flunderWriter(ctx, c.d.clk, c.ext.dyn, s.run, 100*time.Millisecond, func(q request) {
		s.rec.mu.Lock()
		s.rec.flunders = append(s.rec.flunders, q)
		s.rec.mu.Unlock()
	})
}

// write runs the client's writer through the VIP until ctx ends, keeping the times of the
// last acknowledged and the last failed write.
func (s *session) write(ctx context.Context) {
	c := s.c
	writer(ctx, c.d.clk, c.writes, s.run, c.d.opts.writeInterval, func(q request) {
		s.rec.addRequest(q)
		s.mu.Lock()
		if q.OK {
			s.lastAck = q.End
		} else {
			s.lastFail = q.End
		}
		s.mu.Unlock()
	}, func(q request) {
		s.rec.mu.Lock()
		s.rec.cutOff = append(s.rec.cutOff, q)
		s.rec.mu.Unlock()
	})
}

// sampleVIP records every 10 ms where the VIP is, until ctx ends.
func (s *session) sampleVIP(ctx context.Context) {
	vip := netip.MustParseAddr(s.c.vip())
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		smp := s.c.locateVIP(vip)
		s.rec.mu.Lock()
		s.rec.vip = append(s.rec.vip, smp)
		s.rec.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// locateVIP says now which masters hold vip, which of them are reachable, which are handing
// it over, and whose MAC the client's neighbour table has for it.
func (c *cluster) locateVIP(vip netip.Addr) vipSample {
	smp := vipSample{At: c.d.clk.now()}
	if c.spec.BGP {
		// Every healthy master holds the VIP; where it is "on" is where the
		// router sends it.
		smp.Holders = c.routedTo()
		for _, n := range smp.Holders {
			if c.master(n).LinkUp() {
				smp.Reachable = append(smp.Reachable, n)
			}
		}
		return smp
	}
	mac := c.d.client.neighbourMAC(vip)
	for _, m := range c.d.masters {
		held, leaving := m.addrState(vip)
		if leaving {
			smp.Leaving = append(smp.Leaving, m.Name)
		}
		if held {
			smp.Holders = append(smp.Holders, m.Name)
			if m.LinkUp() {
				smp.Reachable = append(smp.Reachable, m.Name)
			}
		}
		if mac != "" && mac == m.MAC {
			smp.ClientARP = m.Name
		}
	}
	return smp
}

// probeVIP starts a TLS probe of the VIP every 50 ms until ctx ends, each with the client's
// patience, so that one that waits on a dead backend does not hide the next one that would
// have succeeded.
func (s *session) probeVIP(ctx context.Context) {
	c, clk := s.c, s.c.d.clk
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var probes sync.WaitGroup
	defer probes.Wait()
	for {
		probes.Go(func() {
			p := probe{Start: clk.now()}
			p.OK = c.d.tlsAnswers(ctx, fmt.Sprintf("%s:%d", c.vip(), lbPort), requestTimeout)
			p.End = clk.now()
			if ctx.Err() != nil {
				return
			}
			s.rec.mu.Lock()
			s.rec.probes = append(s.rec.probes, p)
			s.rec.mu.Unlock()
		})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitRecovered returns once the window after fault is over: at least MinAfter, then until
// no write has failed for Quiet and one has been acknowledged in that time, or at MaxAfter.
func (s *session) waitRecovered(ctx context.Context, fault time.Duration, w windows, extra func() bool) {
	clk := s.c.d.clk
	for ctx.Err() == nil {
		now := clk.now()
		if now-fault >= w.MaxAfter {
			return
		}
		s.mu.Lock()
		quiet := now-s.lastFail >= w.Quiet && now-s.lastAck < w.Quiet
		s.mu.Unlock()
		if now-fault >= w.MinAfter && quiet && s.watchRecovered(fault) && (extra == nil || extra()) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchRecovered reports whether the informer has delivered an object written after fault.
func (s *session) watchRecovered(fault time.Duration) bool {
	s.rec.mu.Lock()
	l := eventLog{Fault: fault, Requests: slices.Clone(s.rec.requests)}
	s.rec.mu.Unlock()
	prefix := s.run + "-"
	s.c.mu.Lock()
	for _, e := range s.c.watch {
		if strings.HasPrefix(e.Name, prefix) && e.At >= fault {
			l.Watch = append(l.Watch, e)
		}
	}
	s.c.mu.Unlock()
	return watchGap(&l) >= 0
}

// probeHealth records, until the session stops, whether m's own apiserver answers
// /healthz, every 100 ms from the client host.
func (s *session) probeHealth(ctx context.Context, m *host) {
	clk := s.c.d.clk
	hc := healthClient(s.c.d.bundle, s.c.d.client, 500*time.Millisecond)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for ctx.Err() == nil && !s.stopped() {
			p := probe{Start: clk.now()}
			p.OK = healthy(ctx, hc, apiURL(m)+"/healthz")
			p.End = clk.now()
			s.rec.mu.Lock()
			s.rec.health = append(s.rec.health, p)
			s.rec.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

func (s *session) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *session) stop() *eventLog {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	l := &eventLog{End: s.c.d.clk.now(), Requests: s.rec.requests, CutOff: s.rec.cutOff, VIP: s.rec.vip, Probes: s.rec.probes, FaultedHealth: s.rec.health,
		FlunderRequests: s.rec.flunders}
	prefix := s.run + "-"
	s.c.mu.Lock()
	for _, e := range s.c.watch {
		if strings.HasPrefix(e.Name, prefix) {
			l.Watch = append(l.Watch, e)
		}
	}
	s.c.mu.Unlock()
	return l
}

// scenarioResult is what a scenario hands to the report.
type scenarioResult struct {
	Metrics metrics
	Log     *eventLog
	Leader  string // etcd leader just before the fault ("" for rejoin)
}

// runScenario runs one scenario from a settled cluster and leaves the cluster as the next
// scenario needs it.
func (c *cluster) runScenario(ctx context.Context, name string) (*scenarioResult, error) {
	d := c.d
	w := d.win
	if err := c.prepareScenario(ctx, name); err != nil {
		return nil, err
	}
	run := shortName(c.spec.Name) + "-" + name
	d.progress("%s %s: recording", c.spec.Name, name)
	s := c.record(ctx, run)
	time.Sleep(w.Before) // recording the steady state before the fault is the point here
	res := &scenarioResult{}
	if name != scRejoin {
		res.Leader = c.etcdLeader(ctx)
	}
	var leasesBefore map[string]string
	if name == scKillMaster && c.withControlPlane() {
		var err error
		if leasesBefore, err = c.leases(ctx); err != nil {
			return nil, fmt.Errorf("%s: leases before the fault: %w", c.spec.Name, err)
		}
	}
	faultAt := time.Now()
	fault := d.clk.now()
	extra, isolated, err := c.injectFault(ctx, name, s)
	if err != nil {
		return nil, err
	}
	if name == scPartitionMaster {
		return c.healPartition(ctx, name, run, fault, s, isolated, res)
	}
	s.waitRecovered(ctx, fault, w, extra)
	l := s.stop()
	res, err = c.finish(ctx, name, run, fault, l, res)
	if err == nil && leasesBefore != nil {
		err = c.controlPlaneAfterFault(ctx, leasesBefore, faultAt, &res.Metrics)
	}
	return res, err
}

// prepareScenario brings the cluster to where the scenario starts: for rejoin, m1 killed
// and the rest serving; for the others, every master up and settled.
func (c *cluster) prepareScenario(ctx context.Context, name string) error {
	d := c.d
	if name == scRejoin {
		if c.down["m1"] != "host" {
			// rejoin needs a killed master: kill it without measuring.
			d.progress("%s %s: killing m1 first (not measured)", c.spec.Name, name)
			if err := c.master("m1").crash(); err != nil {
				return err
			}
			c.down["m1"] = "host"
		}
		if err := c.waitServing(ctx, 60*time.Second); err != nil {
			return err
		}
	} else if err := c.restore(ctx); err != nil {
		return err
	}
	return nil
}

// injectFault does the scenario's fault to m1. It returns what else recovery waits for
// (rejoin: m1 placed and healthy), and for partition-master the probe of writes to the
// cut-off master's own apiserver.
func (c *cluster) injectFault(ctx context.Context, name string, s *session) (extra func() bool, isolated *isolatedProbe, err error) {
	d, m1 := c.d, c.master("m1")
	switch name {
	case scKillMaster:
		d.progress("%s %s: crash m1 (SIGSTOP+SIGKILL of every process, link down)", c.spec.Name, name)
		if err := m1.crash(); err != nil {
			return nil, nil, err
		}
		c.down["m1"] = "host"
		c.stall()
	case scKillAPIServer:
		d.progress("%s %s: SIGKILL the apiserver on m1", c.spec.Name, name)
		c.mu.Lock()
		p := c.api["m1"]
		c.mu.Unlock()
		p.Signal(9)
		c.down["m1"] = "apiserver"
	case scGracefulMaster:
		d.progress("%s %s: SIGTERM every process on m1", c.spec.Name, name)
		if c.spec.HACP {
			// As systemd stops the units (hacp-vipd is ordered after hacp-lbproxy, which is
			// ordered after hacp-apiserver): vipd hands over and exits, then the rest drain.
			go c.stopVipdFirst(m1, 20*time.Second)
		} else {
			go m1.stopGracefully(20 * time.Second)
		}
		c.down["m1"] = "host-graceful"
	case scPartitionMaster:
		d.progress("%s %s: m1's bridge port down", c.spec.Name, name)
		if err := m1.SwitchLink(false); err != nil {
			return nil, nil, err
		}
		isolated = c.startIsolatedProbe(ctx, m1)
	case scRejoin:
		d.progress("%s %s: m1 boots: link up, apiserver and %s start", c.spec.Name, name, c.planeName())
		if err := c.boot(m1); err != nil {
			return nil, nil, err
		}
		s.probeHealth(ctx, m1)
		hc := healthClient(d.bundle, d.client, 500*time.Millisecond)
		extra = func() bool {
			h := c.holders()
			placed := c.settled(h)
			if c.noPreempt() {
				placed = len(h) == 1 // the VIP stays where it is
			}
			return placed && healthy(ctx, hc, apiURL(m1)+"/healthz")
		}
	}
	return extra, isolated, nil
}

// healPartition keeps m1 cut off for the partition window, then heals it and finishes the
// recording once the cluster has recovered.
func (c *cluster) healPartition(ctx context.Context, name, run string, fault time.Duration, s *session, isolated *isolatedProbe, res *scenarioResult) (*scenarioResult, error) {
	d, w, m1 := c.d, c.d.win, c.master("m1")
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(w.Partition):
	}
	n := isolated.stop()
	if isolated.tried == 0 {
		return nil, fmt.Errorf("%s %s: the isolated-write check made no request: %v", c.spec.Name, name, isolated.err)
	}
	res.Metrics.IsolatedWrites = &n
	d.progress("%s %s: heal after %v (m1's own apiserver acknowledged %d of %d writes tried while cut off)", c.spec.Name, name, w.Partition, n, isolated.tried)
	heal := d.clk.now()
	if err := m1.SwitchLink(true); err != nil {
		return nil, err
	}
	s.waitRecovered(ctx, heal, w, func() bool { return c.settled(c.holders()) })
	l := s.stop()
	l.Heal = heal
	return c.finish(ctx, name, run, fault, l, res)
}

// finish reads the run's objects back from a surviving master and computes the metrics.
func (c *cluster) finish(ctx context.Context, name, run string, fault time.Duration, l *eventLog, res *scenarioResult) (*scenarioResult, error) {
	d := c.d
	l.Fault, l.Faulted, l.WantBack, l.Anycast = fault, "m1", name == scRejoin, c.spec.BGP
	var names map[string]map[string]string
	survivor := c.master("m2")
	err := poll(ctx, 30*time.Second, func() bool {
		var err error
		names, err = readBack(ctx, d.bundle, d.client, apiURL(survivor), run)
		return err == nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: read back from %s: %w", c.spec.Name, name, survivor.Name, err)
	}
	// The request cut off by the end of recording left its object in doubt, as a failed one.
	lost := verifyWrites(append(l.Requests[:len(l.Requests):len(l.Requests)], l.CutOff...), names)
	for _, q := range lost {
		_, there := names[q.Name]
		d.progress("%s %s: LOST acknowledged %s of %s (%s=%s), sent at %.3fs, answered at %.3fs; read back: present=%v data=%v",
			c.spec.Name, name, q.Op, q.Name, q.Key, q.Value, q.Start.Seconds(), q.End.Seconds(), there, names[q.Name])
	}
	if len(l.FlunderRequests) > 0 {
		// Give the flunder informer time to deliver what it missed (a relist after the
		// fault), then take its events: a gap longer than the recording still shows.
		want := map[string]bool{}
		for _, q := range l.FlunderRequests {
			if q.OK {
				want[q.Name] = true
			}
		}
		_ = poll(ctx, 30*time.Second, func() bool {
			seen := map[string]bool{}
			for _, e := range c.ext.flunderEvents(run) {
				seen[e.Name] = true
			}
			for n := range want {
				if !seen[n] {
					return false
				}
			}
			return true
		})
		l.FlunderWatch = c.ext.flunderEvents(run)
	}
	isolated := res.Metrics.IsolatedWrites
	res.Metrics = compute(l, len(lost))
	res.Metrics.IsolatedWrites = isolated
	res.Log = l
	if res.Leader != "" {
		d.progress("%s %s: etcd leader before the fault: %s", c.spec.Name, name, res.Leader)
	}
	d.progress("%s %s: vip_failover_s=%v api_downtime_s=%v failed_requests=%d last_failure_s=%v writes_acked=%d writes_lost=%d watch_gap_s=%v split_brain_s=%v",
		c.spec.Name, name, res.Metrics.VIPFailoverS, res.Metrics.APIDowntimeS, res.Metrics.FailedRequests, res.Metrics.LastFailureS,
		res.Metrics.WritesAcked, res.Metrics.WritesLost, res.Metrics.WatchGapS, res.Metrics.SplitBrainS)
	if m := res.Metrics; m.FlunderWatchGapS != nil {
		d.progress("%s %s: flunder_watch_gap_s=%v flunders_acked=%d flunders_unseen=%d flunder_failed_requests=%d",
			c.spec.Name, name, *m.FlunderWatchGapS, *m.FlundersAcked, *m.FlundersUnseen, *m.FlunderFailedRequests)
	}
	if err := d.saveLog(c.spec.Name, name, l); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *cluster) planeName() string {
	if c.spec.HACP {
		return "vipd+lbproxy"
	}
	return "keepalived+haproxy"
}

// boot brings a stopped master back as a reboot would: no VIP left on it, link up, then
// the apiserver (with its data) and the VIP daemon and balancer.
func (c *cluster) boot(m *host) error {
	m.killAll()
	m.waitProcs(5 * time.Second)
	_ = runIP("-n", m.NS, "addr", "del", vipAddr+"/24", "dev", m.Iface)
	_ = runIP("-n", m.NS, "addr", "del", bgpVIPAddr+"/32", "dev", "lo")
	if err := m.SwitchLink(true); err != nil {
		return err
	}
	// Services start once the network is up, as after network-online.target.
	if err := poll(context.Background(), 5*time.Second, m.carrier); err != nil {
		return fmt.Errorf("%s: %s has no carrier after link up: %w", m.Name, m.Iface, err)
	}
	if err := c.startAPIServer(m, "existing"); err != nil {
		return err
	}
	if err := c.startPlane(m); err != nil {
		return err
	}
	if c.withControlPlane() {
		if err := c.startUpstreamOn(m); err != nil {
			return err
		}
	}
	delete(c.down, m.Name)
	return nil
}

// restore undoes the last scenario's fault and waits until the cluster is settled again.
func (c *cluster) restore(ctx context.Context) error {
	for name, what := range c.down {
		m := c.master(name)
		c.d.progress("%s: restoring %s (%s)", c.spec.Name, name, what)
		switch what {
		case "apiserver":
			if err := c.startAPIServer(m, "existing"); err != nil {
				return err
			}
			delete(c.down, name)
		default:
			if err := c.boot(m); err != nil {
				return err
			}
		}
	}
	if c.noPreempt() {
		if err := c.waitAPIServers(ctx, c.d.masters, 90*time.Second); err != nil {
			return err
		}
		// m1's check may still be failing from its start (its priority lowered): try again
		// until m1 is the one that takes the VIP.
		err := poll(ctx, 90*time.Second, func() bool {
			if h := c.holders(); len(h) == 1 && h[0] == "m1" {
				return true
			}
			if err := c.moveVIPToM1(ctx); err != nil {
				c.d.progress("%s: %v", c.spec.Name, err)
			}
			_ = poll(ctx, 3*time.Second, func() bool { h := c.holders(); return len(h) == 1 && h[0] == "m1" })
			return false
		})
		if err != nil {
			return fmt.Errorf("%s: VIP not moved back to m1: %w", c.spec.Name, err)
		}
	}
	return c.waitSettled(ctx, 90*time.Second)
}

// waitServing waits, with m1 down, until the VIP is on another master and writes succeed.
func (c *cluster) waitServing(ctx context.Context, timeout time.Duration) error {
	err := poll(ctx, timeout, func() bool { return c.servingWithout(c.holders()) })
	if err != nil {
		return fmt.Errorf("%s: VIP did not move off m1: %w", c.spec.Name, err)
	}
	ok := 0
	return poll(ctx, timeout, func() bool {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		writer(wctx, c.d.clk, c.writes, c.settleRun(), 0, func(q request) {
			if q.OK {
				ok++
			} else {
				ok = 0
			}
			if ok >= 10 || !q.OK {
				cancel()
			}
		}, nil)
		return ok >= 10
	})
}

// isolatedProbe writes through the isolated master's own apiserver, from inside that
// master: any acknowledged write there would be a write a partitioned master served.
type isolatedProbe struct {
	cancel context.CancelFunc
	done   chan struct{}
	tried  int
	acked  int
	err    error
}

func (c *cluster) startIsolatedProbe(ctx context.Context, m *host) *isolatedProbe {
	ctx, cancel := context.WithCancel(ctx)
	ip := &isolatedProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ip.done)
		cs, err := newConnPerRequest(c.d.bundle, m, fmt.Sprintf("https://127.0.0.1:%d", apiPort))
		if err != nil {
			ip.err = err
			return
		}
		writer(ctx, c.d.clk, cs, shortName(c.spec.Name)+"-isolated", 50*time.Millisecond, func(q request) {
			ip.tried++
			if q.OK {
				ip.acked++
			}
		}, nil)
	}()
	return ip
}

// stop ends the probe and waits for its last request (at most one request timeout).
func (ip *isolatedProbe) stop() int {
	ip.cancel()
	<-ip.done
	return ip.acked
}

// saveLog writes a scenario's raw event log next to the report, for anyone who wants to
// check a number.
func (d *drill) saveLog(stack, scenario string, l *eventLog) error {
	dir := filepath.Join(d.opts.out, "events")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, shortName(stack)+"-"+scenario+".json"), data, 0o644)
}
