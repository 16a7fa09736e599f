// Package flowcontrol is API Priority and Fairness (APF) as kube-apiserver's
// APIPriorityAndFairness filter: the FlowSchemas and PriorityLevelConfigurations
// (flowcontrol.apiserver.k8s.io) classify each request to a priority level; each level
// has its share of the server's seats, fair queues dealt by shuffle sharding, and may lend
// and borrow seats; what does not fit in time is rejected with 429.
package flowcontrol

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Options configure a Controller.
type Options struct {
	// Seats is the server's concurrency limit, divided among the priority levels: upstream's
	// --max-requests-inflight + --max-mutating-requests-inflight.
	Seats int
	// FlowSchemas and PriorityLevels are the registry's stores of the configuration objects.
	FlowSchemas, PriorityLevels Store
	// Informers is the shared informer factory the objects are read through.
	Informers *informer.Factory
	// Count tells how many objects of a resource are stored, for the seats of a list; nil
	// or not known: a list takes its level's most seats, as upstream.
	Count func(group, resource string) (int, bool)
	// WaitLimit is how long a request may wait in its queue (upstream: a quarter of the
	// request timeout); 15 s when zero.
	WaitLimit time.Duration
	// EnsureInterval is how often the bootstrap configuration is put back; a minute when zero.
	EnsureInterval time.Duration
	Log            *slog.Logger
}

// Controller classifies and dispatches requests by the configuration it follows.
type Controller struct {
	opts Options
	// mu is held for reading from classifying a request to queuing it, for writing while
	// a new config is applied: a request is never queued at a level that just went away.
	mu      sync.RWMutex
	cfg     atomic.Pointer[config]
	disp    *dispatcher
	metrics *metrics
	fsInf   *informer.Informer[*flowcontrolv1.FlowSchema]
	plInf   *informer.Informer[*flowcontrolv1.PriorityLevelConfiguration]
	changed chan struct{}
	retry   *retryAfter
}

// New returns a controller; Start makes it follow the configuration.
func New(opts Options) *Controller {
	if opts.WaitLimit <= 0 {
		opts.WaitLimit = 15 * time.Second
	}
	if opts.EnsureInterval <= 0 {
		opts.EnsureInterval = time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	m := newMetrics()
	c := &Controller{opts: opts, metrics: m, disp: newDispatcher(opts.Seats, m, time.Now), changed: make(chan struct{}, 1),
		retry: newRetryAfter(time.Now)}
	c.fsInf = informer.For[*flowcontrolv1.FlowSchema](opts.Informers, flowcontrolv1.Resource("flowschemas"))
	c.plInf = informer.For[*flowcontrolv1.PriorityLevelConfiguration](opts.Informers, flowcontrolv1.Resource("prioritylevelconfigurations"))
	c.apply(digest(nil, nil))
	return c
}

// Collectors are the controller's apiserver_flowcontrol_* metrics.
func (c *Controller) Collectors() []prometheus.Collector { return c.metrics.collectors() }

// Start puts the bootstrap configuration in place, waits until the informers have the
// objects and applies them; Run follows them from then on.
func (c *Controller) Start(ctx context.Context) error {
	if err := EnsureBootstrap(ctx, c.opts.PriorityLevels, c.opts.FlowSchemas); err != nil {
		c.opts.Log.Warn("API priority and fairness bootstrap configuration not ensured; retried later", "err", err)
	}
	notify := func() {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	c.fsInf.AddHandler(informer.Handler[*flowcontrolv1.FlowSchema]{OnAdd: func(*flowcontrolv1.FlowSchema) { notify() },
		OnUpdate: func(_, _ *flowcontrolv1.FlowSchema) { notify() }, OnDelete: func(*flowcontrolv1.FlowSchema) { notify() }})
	c.plInf.AddHandler(informer.Handler[*flowcontrolv1.PriorityLevelConfiguration]{OnAdd: func(*flowcontrolv1.PriorityLevelConfiguration) { notify() },
		OnUpdate: func(_, _ *flowcontrolv1.PriorityLevelConfiguration) { notify() }, OnDelete: func(*flowcontrolv1.PriorityLevelConfiguration) { notify() }})
	if err := c.fsInf.WaitForSync(ctx); err != nil {
		return err
	}
	if err := c.plInf.WaitForSync(ctx); err != nil {
		return err
	}
	c.sync(ctx)
	return nil
}

// Run applies the objects' changes, recomputes the levels' current limits every
// BorrowingPeriod and puts the bootstrap configuration back every EnsureInterval, until
// ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.EnsureInterval)
	defer t.Stop()
	borrow := time.NewTicker(BorrowingPeriod)
	defer borrow.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
			c.sync(ctx)
		case <-borrow.C:
			c.disp.adjust()
		case <-t.C:
			if err := EnsureBootstrap(ctx, c.opts.PriorityLevels, c.opts.FlowSchemas); err != nil && ctx.Err() == nil {
				c.opts.Log.Warn("API priority and fairness bootstrap configuration not ensured", "err", err)
			}
		}
	}
}

// sync applies the objects the informers have and brings the FlowSchemas' Dangling
// conditions up to date.
func (c *Controller) sync(ctx context.Context) {
	fss := c.fsInf.List("")
	cfg := digest(c.plInf.List(""), fss)
	c.apply(cfg)
	for _, fs := range fss {
		if err := c.syncDangling(ctx, fs, slices.Contains(cfg.dangling, fs.Name)); err != nil && ctx.Err() == nil {
			c.opts.Log.Warn("FlowSchema status not updated", "flowschema", fs.Name, "err", err)
		}
	}
}

func (c *Controller) apply(cfg *config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disp.configure(cfg)
	c.cfg.Store(cfg)
}

// consumerManager is the field manager of upstream's status writes.
const consumerManager = "api-priority-and-fairness-config-consumer-v1"

// danglingCondition is the Dangling condition a FlowSchema should have, as upstream words it.
func danglingCondition(fs *flowcontrolv1.FlowSchema, dangling bool) flowcontrolv1.FlowSchemaCondition {
	pl := fs.Spec.PriorityLevelConfiguration.Name
	if dangling {
		return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", pl)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", pl)}
}

// syncDangling writes fs's Dangling condition when it is not what it should be.
func (c *Controller) syncDangling(ctx context.Context, fs *flowcontrolv1.FlowSchema, dangling bool) error {
	want := danglingCondition(fs, dangling)
	if cur := findCondition(fs); cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
		return nil
	}
	want.LastTransitionTime = metav1.Now()
	_, _, err := c.opts.FlowSchemas.UpdateStatus(ctx, "", fs.Name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		out := cur.(*flowcontrolv1.FlowSchema)
		if old := findCondition(out); old != nil {
			*old = want
		} else {
			out.Status.Conditions = append(out.Status.Conditions, want)
		}
		return out, nil
	}, &metav1.UpdateOptions{FieldManager: consumerManager})
	return err
}

func findCondition(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchemaCondition {
	for i := range fs.Status.Conditions {
		if fs.Status.Conditions[i].Type == flowcontrolv1.FlowSchemaConditionDangling {
			return &fs.Status.Conditions[i]
		}
	}
	return nil
}
