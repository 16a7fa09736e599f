// Package lease elects one leader among hosts through a coordination.k8s.io/v1 Lease on the
// apiserver, the way client-go's leaderelection and kube-vip do: a candidate creates the
// Lease or takes it over once it has expired, the leader renews it, and every write is
// guarded by the Lease's resourceVersion so that two candidates cannot both win. It speaks
// plain HTTPS with the k8s.io/api types (no client-go).
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config is one elector's settings. The durations' defaults are client-go's (and
// kube-vip's): 15s, 10s, 2s.
type Config struct {
	Credentials *Credentials
	Namespace   string
	Name        string
	Identity    string // this candidate's holderIdentity, unique per host
	// Duration is how long the others wait, from the last change of the Lease they saw,
	// before taking it over from a leader that stopped renewing.
	Duration time.Duration
	// RenewDeadline: a leader that could not renew for this long steps down (before the
	// others may take over at Duration).
	RenewDeadline time.Duration
	// RetryPeriod is the interval between renewals and between candidates' attempts.
	RetryPeriod time.Duration
	// Eligible says whether this host may lead now (its health checks pass); a leader that
	// becomes ineligible steps down and releases the Lease. Nil: always.
	Eligible func() bool
	// OnChange is called when this host becomes leader or stops being one, from the
	// elector's goroutine; the Lease is released only after it returns.
	OnChange func(leader bool)
	Log      *slog.Logger
}

// Validate checks the settings as client-go does: Duration > RenewDeadline > RetryPeriod.
func (c *Config) Validate() error {
	switch {
	case c.Credentials == nil:
		return errors.New("lease: no apiserver credentials")
	case c.Namespace == "" || c.Name == "":
		return errors.New("lease: namespace and name are required")
	case c.Identity == "":
		return errors.New("lease: identity is required")
	case c.RetryPeriod <= 0:
		return errors.New("lease: retry period must be positive")
	case c.RenewDeadline <= c.RetryPeriod*6/5:
		return errors.New("lease: renew deadline must be above 1.2 retry periods")
	case c.Duration <= c.RenewDeadline:
		return errors.New("lease: lease duration must be above the renew deadline")
	case c.Duration%time.Second != 0:
		return errors.New("lease: lease duration must be whole seconds")
	}
	return nil
}

// Elector runs one candidate. Its methods are safe for concurrent use.
type Elector struct {
	cfg   Config
	c     *client
	wakec chan struct{}
	done  chan struct{}
	run   sync.Once

	mu           sync.Mutex
	leader       bool
	since        time.Time // of the current leader state
	lastRenew    time.Time // start of the last successful write as leader
	holder       string    // as last seen in the Lease
	observedRV   string
	observedTime time.Time // when this host saw the Lease change last
	lastErr      string
	transitions  int // times this host became leader
}

// New returns an elector for cfg; Run starts it.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Elector{
		cfg:   cfg,
		c:     newClient(cfg.Credentials, cfg.Namespace, cfg.Name),
		wakec: make(chan struct{}, 1),
		done:  make(chan struct{}),
		since: time.Now(),
	}, nil
}

// Status is the elector's part of vipd's /status.
type Status struct {
	Lease     string    `json:"lease"` // namespace/name
	Identity  string    `json:"identity"`
	Leader    bool      `json:"leader"`
	Since     time.Time `json:"since"`
	Holder    string    `json:"holder"` // holderIdentity as last seen; "" when free
	LastRenew time.Time `json:"last_renew,omitzero"`
	Error     string    `json:"error,omitempty"` // the last failed request, until one succeeds
}

// Status returns the elector's state.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Status{Lease: e.cfg.Namespace + "/" + e.cfg.Name, Identity: e.cfg.Identity, Leader: e.leader,
		Since: e.since, Holder: e.holder, Error: e.lastErr}
	if e.leader {
		st.LastRenew = e.lastRenew
	}
	return st
}

// Leader reports whether this host holds the Lease now.
func (e *Elector) Leader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

// Wake makes the elector look at the Lease and at Eligible now.
func (e *Elector) Wake() {
	select {
	case e.wakec <- struct{}{}:
	default:
	}
}

// Run campaigns and renews until ctx ends. It does not release the Lease: the caller first
// stops what the leadership guards (withdraws the route), then calls Release.
func (e *Elector) Run(ctx context.Context) {
	started := false
	e.run.Do(func() { started = true })
	if !started {
		return
	}
	defer close(e.done)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go e.watch(wctx)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wakec:
		}
		e.step(ctx)
		t.Reset(e.nextStep())
	}
}

// nextStep is the wait until the next attempt: the retry period (with up to 20% jitter
// for candidates, as client-go), but no later than a leader's renew deadline.
func (e *Elector) nextStep() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.cfg.RetryPeriod
	if !e.leader {
		return d + rand.N(d/5+1)
	}
	if left := time.Until(e.lastRenew.Add(e.cfg.RenewDeadline)); left < d {
		d = max(left, 0)
	}
	return d
}

// watch wakes a candidate as soon as the Lease is released or deleted, so that a graceful
// handover does not wait for the next retry; the retries alone would do as well, later.
func (e *Elector) watch(ctx context.Context) {
	for ctx.Err() == nil {
		err := e.c.watch(ctx, func(l *coordinationv1.Lease) {
			if (l == nil || holderOf(l) == "") && !e.Leader() {
				e.Wake()
			}
		})
		if ctx.Err() != nil {
			return
		}
		e.cfg.Log.Debug("lease watch ended; retrying", "err", fmt.Sprint(err))
		t := time.NewTimer(e.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func (e *Elector) step(ctx context.Context) {
	eligible := e.cfg.Eligible == nil || e.cfg.Eligible()
	e.mu.Lock()
	leader, deadline := e.leader, e.lastRenew.Add(e.cfg.RenewDeadline)
	e.mu.Unlock()
	switch {
	case leader && !eligible:
		e.setLeader(false, "not eligible (health check failing)")
		rctx, cancel := context.WithTimeout(ctx, e.cfg.RetryPeriod)
		if err := e.release(rctx); err != nil {
			e.cfg.Log.Warn("cannot release the lease after stepping down", "err", err.Error())
		}
		cancel()
	case leader:
		rctx, cancel := context.WithDeadline(ctx, deadline)
		start := time.Now()
		won, err := e.tryAcquireOrRenew(rctx, start)
		cancel()
		switch {
		case won:
			e.mu.Lock()
			e.lastRenew = start
			e.mu.Unlock()
		case err == nil:
			e.setLeader(false, "another host holds the lease")
		case !time.Now().Before(deadline):
			e.setLeader(false, "could not renew the lease within the renew deadline")
		}
	case eligible:
		rctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
		start := time.Now()
		won, _ := e.tryAcquireOrRenew(rctx, start)
		cancel()
		if won {
			e.mu.Lock()
			e.lastRenew = start
			e.mu.Unlock()
			e.setLeader(true, "acquired the lease")
		}
	}
}

func (e *Elector) setLeader(leader bool, why string) {
	e.mu.Lock()
	if e.leader == leader {
		e.mu.Unlock()
		return
	}
	e.leader, e.since = leader, time.Now()
	if leader {
		e.transitions++
	}
	e.mu.Unlock()
	e.cfg.Log.Info("leader election", "leader", leader, "reason", why, "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(leader)
	}
}

// observe records l as seen now; the expiry clock of another holder starts when this host
// sees the Lease change (client-go's observedTime), so clocks need not agree.
func (e *Elector) observe(l *coordinationv1.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l.ResourceVersion != e.observedRV {
		e.observedRV, e.observedTime = l.ResourceVersion, time.Now()
	}
	e.holder = holderOf(l)
}

func (e *Elector) fail(err error) error {
	e.mu.Lock()
	e.lastErr = err.Error()
	e.mu.Unlock()
	return err
}

func (e *Elector) ok() {
	e.mu.Lock()
	e.lastErr = ""
	e.mu.Unlock()
}

// tryAcquireOrRenew creates the Lease, renews it, or takes it over if it is free or has
// expired. It returns false with a nil error when another host holds it or won the race.
func (e *Elector) tryAcquireOrRenew(ctx context.Context, now time.Time) (bool, error) {
	id := e.cfg.Identity
	secs := int32(e.cfg.Duration / time.Second)
	mt := metav1.NewMicroTime(now)
	l, err := e.c.get(ctx)
	if errors.Is(err, errNotFound) {
		var zero int32
		created, err := e.c.create(ctx, &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &mt, RenewTime: &mt, LeaseTransitions: &zero,
		}})
		if errors.Is(err, errConflict) {
			e.ok()
			return false, nil
		}
		if err != nil {
			return false, e.fail(fmt.Errorf("lease: create %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err))
		}
		e.ok()
		e.observe(created)
		return true, nil
	}
	if err != nil {
		return false, e.fail(fmt.Errorf("lease: get %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err))
	}
	e.ok()
	e.observe(l)
	holder := holderOf(l)
	if holder != "" && holder != id {
		d := e.cfg.Duration
		if s := l.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
			d = time.Duration(*s) * time.Second
		}
		e.mu.Lock()
		expired := !time.Now().Before(e.observedTime.Add(d))
		e.mu.Unlock()
		if !expired {
			return false, nil
		}
	}
	nl := l.DeepCopy()
	if holder != id {
		nl.Spec.AcquireTime = &mt
		var n int32
		if nl.Spec.LeaseTransitions != nil {
			n = *nl.Spec.LeaseTransitions
		}
		n++
		nl.Spec.LeaseTransitions = &n
	}
	nl.Spec.HolderIdentity, nl.Spec.LeaseDurationSeconds, nl.Spec.RenewTime = &id, &secs, &mt
	upd, err := e.c.update(ctx, nl)
	if errors.Is(err, errConflict) {
		return false, nil
	}
	if err != nil {
		return false, e.fail(fmt.Errorf("lease: update %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err))
	}
	e.observe(upd)
	return true, nil
}

// Release ends the leadership (without calling OnChange) and, if the Lease names this host,
// clears its holderIdentity so that another candidate takes over at once instead of after
// the lease duration. Call it once Run's context has ended (it waits for Run to return) and
// what the leadership guarded has stopped. It is a no-op if this host does not hold the
// Lease.
func (e *Elector) Release(ctx context.Context) error {
	e.run.Do(func() { close(e.done) }) // Run will not start after this
	select {
	case <-e.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	e.mu.Lock()
	e.leader = false
	e.mu.Unlock()
	return e.release(ctx)
}

func (e *Elector) release(ctx context.Context) error {
	e.mu.Lock()
	held := e.holder == e.cfg.Identity
	e.mu.Unlock()
	if !held {
		return nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		l, err := e.c.get(ctx)
		if errors.Is(err, errNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lease: release %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err)
		}
		if holderOf(l) != e.cfg.Identity {
			e.observe(l)
			return nil
		}
		nl := l.DeepCopy()
		empty, one := "", int32(1)
		now := metav1.NewMicroTime(time.Now())
		nl.Spec.HolderIdentity, nl.Spec.LeaseDurationSeconds, nl.Spec.RenewTime = &empty, &one, &now
		upd, err := e.c.update(ctx, nl)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("lease: release %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err)
		}
		e.observe(upd)
		e.cfg.Log.Info("lease released", "lease", e.cfg.Namespace+"/"+e.cfg.Name)
		return nil
	}
	return fmt.Errorf("lease: release %s/%s: conflicting writes", e.cfg.Namespace, e.cfg.Name)
}
