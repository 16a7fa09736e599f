// Package aggregator is hacp's API aggregation layer, kube-aggregator's job: it keeps the
// apiregistration.k8s.io APIServices of the locally served group versions, checks the
// service-backed ones for availability, proxies their requests to the extension API server
// with the caller's identity in the front-proxy headers, and merges their groups into
// discovery.
package aggregator

import (
	"context"
	"crypto/tls"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Config configures an Aggregator.
type Config struct {
	Registry registry.Resources
	// BuiltIn are the group versions this server serves itself; each gets a local APIService
	// (labelled automanaged=onstart, as kube-apiserver's autoregister controller does).
	BuiltIn []schema.GroupVersion
	// Custom returns the group versions of the CustomResourceDefinitions served now; each
	// gets a local APIService labelled automanaged=true (upstream's crdregistration).
	Custom func() []schema.GroupVersion
	// ProxyClientCert authenticates this server to the extension API servers
	// (--proxy-client-cert-file/--proxy-client-key-file), asked at each handshake so that a
	// renewed one is presented as soon as it is loaded; nil: none is presented.
	ProxyClientCert func() *tls.Certificate
	// CheckInterval is how often every service-backed APIService is checked; 0: 30 s, as
	// kube-aggregator's availability controller resyncs.
	CheckInterval time.Duration
	// Stop, when set, returns a channel closed when the server ends its long-running
	// requests (shutdown): proxied streams end then too.
	Stop   func() <-chan struct{}
	Logger *slog.Logger
}

// AutoManagedLabel marks the APIServices the server keeps itself, as upstream's.
const AutoManagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// Aggregator serves the aggregation layer; Wrap puts it in front of the local API handler
// and Run keeps its state.
type Aggregator struct {
	cfg         Config
	log         *slog.Logger
	apiServices *registry.Store
	services    *registry.Store
	endpoints   *registry.Store
	status      registry.Storage

	mu       sync.Mutex
	known    map[string]*apiregistration.APIService // by name, as last seen
	backends map[string]*backend                    // service-backed, by APIService name
	// view is what requests read: the service-backed group versions and their discovery.
	view atomic.Pointer[view]

	localChanged chan struct{} // the served custom group versions changed
	checkNow     chan struct{} // an APIService or a backend changed: check them now
	started      atomic.Bool
	synced       chan struct{} // closed once the APIServices were listed
	wg           sync.WaitGroup

	openapiGen atomic.Uint64            // numbers the extension servers' v2 documents
	mergedV2   atomic.Pointer[mergedV2] // the last merged /openapi/v2
}

// view is one consistent picture of the service-backed APIServices, swapped whole.
type view struct {
	byGV map[schema.GroupVersion]*backend
}

// New returns an Aggregator; nothing runs until Run.
func New(cfg Config) *Aggregator {
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Custom == nil {
		cfg.Custom = func() []schema.GroupVersion { return nil }
	}
	reg := cfg.Registry
	res := reg.Resource(apiregistration.Resource("apiservices"))
	a := &Aggregator{
		cfg: cfg, log: cfg.Logger,
		apiServices:  res.Store,
		status:       res.Subresources["status"],
		services:     reg.Resource(schema.GroupResource{Resource: "services"}).Store,
		endpoints:    reg.Resource(schema.GroupResource{Resource: "endpoints"}).Store,
		known:        map[string]*apiregistration.APIService{},
		backends:     map[string]*backend{},
		localChanged: make(chan struct{}, 1),
		checkNow:     make(chan struct{}, 1),
		synced:       make(chan struct{}),
	}
	a.view.Store(&view{byGV: map[schema.GroupVersion]*backend{}})
	return a
}

// LocalChanged tells the aggregator that the served custom resources changed.
func (a *Aggregator) LocalChanged() { signal(a.localChanged) }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run follows the APIServices, keeps the local ones and checks the service-backed ones
// until ctx ends; Wait waits for it to finish.
func (a *Aggregator) Run(ctx context.Context) {
	if !a.started.CompareAndSwap(false, true) {
		return
	}
	a.wg.Add(3)
	go func() { defer a.wg.Done(); a.follow(ctx) }()
	go func() { defer a.wg.Done(); a.keepLocal(ctx) }()
	go func() { defer a.wg.Done(); a.keepChecking(ctx) }()
}

// Wait waits for Run's goroutines to end (after its context is cancelled).
func (a *Aggregator) Wait() { a.wg.Wait() }

// follow lists and watches the APIServices into a.known, re-listing whenever a watch ends.
func (a *Aggregator) follow(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.followOnce(ctx); err != nil && ctx.Err() == nil {
			a.log.Debug("aggregator: apiservice watch ended", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (a *Aggregator) followOnce(ctx context.Context) error {
	obj, err := a.apiServices.List(ctx, "", &metav1.ListOptions{})
	if err != nil {
		return err
	}
	list := obj.(*apiregistration.APIServiceList)
	known := map[string]*apiregistration.APIService{}
	for i := range list.Items {
		known[list.Items[i].Name] = &list.Items[i]
	}
	a.mu.Lock()
	a.known = known
	a.rebuildLocked()
	a.mu.Unlock()
	select {
	case <-a.synced:
	default:
		close(a.synced)
	}
	w, err := a.apiServices.Watch(ctx, "", &metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			s, isService := ev.Object.(*apiregistration.APIService)
			if !isService {
				if ev.Type == watch.Error {
					return nil
				}
				continue
			}
			a.mu.Lock()
			switch ev.Type {
			case watch.Added, watch.Modified:
				a.known[s.Name] = s
			case watch.Deleted:
				delete(a.known, s.Name)
			}
			a.rebuildLocked()
			a.mu.Unlock()
		}
	}
}

// rebuildLocked brings the backends in line with the known APIServices and publishes a
// new view. A backend whose spec did not change keeps its transport and discovery.
func (a *Aggregator) rebuildLocked() {
	changed := false
	for name, b := range a.backends {
		s, ok := a.known[name]
		if !ok || s.Spec.Service == nil || !sameBackendSpec(&b.spec, &s.Spec) {
			b.close()
			delete(a.backends, name)
			changed = true
		}
	}
	for name, s := range a.known {
		if s.Spec.Service == nil {
			continue
		}
		b, ok := a.backends[name]
		if !ok {
			nb, err := newBackend(s, a.cfg.ProxyClientCert)
			if err != nil {
				a.log.Warn("aggregator: apiservice transport", "apiservice", name, "err", err)
			}
			a.backends[name] = nb
			b = nb
			changed = true
		}
		b.setAvailable(s.IsAvailable())
	}
	v := &view{byGV: make(map[schema.GroupVersion]*backend, len(a.backends))}
	for _, b := range a.backends {
		v.byGV[b.gv] = b
	}
	a.view.Store(v)
	if changed {
		signal(a.checkNow)
	}
}

// snapshot returns the known APIServices.
func (a *Aggregator) snapshot() map[string]*apiregistration.APIService {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.known)
}

// Wrap returns next behind the aggregation layer: requests for a service-backed group
// version go to its extension server, and discovery includes their groups.
func (a *Aggregator) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.serveDiscovery(w, r, next) {
			return
		}
		if b := a.backendFor(r.URL.Path); b != nil {
			a.proxy(w, r, b)
			return
		}
		next.ServeHTTP(w, r)
	})
}
