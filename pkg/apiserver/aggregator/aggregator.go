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
	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Config configures an Aggregator.
type Config struct {
	Registry registry.Resources
	// Informers gives the shared informer of the APIServices.
	Informers *informer.Factory
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
	informer    *informer.Informer[*apiregistration.APIService]
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
	res := reg.Resource(apiServicesGR)
	a := &Aggregator{
		cfg: cfg, log: cfg.Logger,
		apiServices:  res.Store,
		informer:     informer.For[*apiregistration.APIService](cfg.Informers, apiServicesGR),
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
	a.follow()
	a.wg.Add(3)
	go func() {
		defer a.wg.Done()
		if a.informer.WaitForSync(ctx) == nil {
			close(a.synced)
		}
	}()
	go func() { defer a.wg.Done(); a.keepLocal(ctx) }()
	go func() { defer a.wg.Done(); a.keepChecking(ctx) }()
}

// Wait waits for Run's goroutines to end (after its context is cancelled).
func (a *Aggregator) Wait() { a.wg.Wait() }

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
