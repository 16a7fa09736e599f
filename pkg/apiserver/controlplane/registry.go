// Package controlplane assembles the registry: the store of every built-in kind (Kinds
// lists them), their views and subresources, the custom resources, and the controllers
// that keep them: namespace lifecycle and cleanup, the system namespaces, the "kubernetes"
// Service and its endpoints, the Service IP and NodePort repair and the bootstrap
// priority classes.
package controlplane

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	"github.com/hacp/hacp/pkg/apiserver/registry/customresources"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Registry holds every built-in resource.
type Registry struct {
	Resources []*registry.Resource
	byGR      map[schema.GroupResource]*registry.Resource
	log       *slog.Logger

	// Views are served resources without storage of their own (see View).
	Views []*registry.View

	mu          sync.Mutex
	terminating map[string]bool // namespaces being emptied by this process
	wg          sync.WaitGroup
	ctx         context.Context

	// informers are the shared informers of the apiserver's own controllers and caches
	// (this package's, the CRDs', authz's, admission's, the aggregator's).
	informers  *informer.Factory
	namespaces *informer.Informer[*corev1.Namespace] // a miss falls back to etcd

	client *clientv3.Client
	cfg    Config

	serviceAlloc   *core.ServiceAllocator
	endpointsCodec storage.Codec // the masterleases/ values

	sessMu sync.Mutex
	sess   *concurrency.Session // holds this process's namespace cleanup locks

	crd *customresources.Manager // serves the custom resources of CustomResourceDefinitions

	connect atomic.Pointer[registry.ConnectFunc] // SetConnect's: serves the proxy-type subresources

	cachers []*storage.Cacher // the built-in resources' watch caches

}

// Config configures the registry.
type Config struct {
	Prefix           string // etcd key prefix, "/registry" by default
	BookmarkInterval time.Duration
	Logger           *slog.Logger
	// AttemptTimeout bounds one etcd request of a write, which is then retried (see
	// storage.Config.AttemptTimeout).
	AttemptTimeout time.Duration
	// CompactionInterval is how often etcd's history is compacted, in turns with the other
	// apiservers on the same etcd (storage.RunCompactor); 0: never (an embedded member
	// compacts itself).
	CompactionInterval time.Duration
	// ServiceRanges are the pools of Service ClusterIPs and NodePorts (the defaults when
	// empty; the server validates them first).
	ServiceRanges core.ServiceRanges
	// ServiceRepairInterval is how often the Service IP and port pools are checked against
	// the Services (RepairServices); 0: every 3 minutes, as upstream's repair controllers;
	// negative: never in the background (tests run passes themselves).
	ServiceRepairInterval time.Duration
	// SystemNamespacesInterval is how often the system namespaces (default, kube-system,
	// kube-public, kube-node-lease) are created again if deleted; 0: every minute, as
	// upstream's system-namespaces controller; negative: only at Start.
	SystemNamespacesInterval time.Duration
	// WatchCache serves each resource's lists, watches and gets that allow it from a
	// watch cache fed by one etcd watch (storage.Cacher), as kube-apiserver's --watch-cache.
	WatchCache bool
	// WatchCacheSizes sets the event history of some resources' caches ("configmaps",
	// "deployments.apps"); DefaultWatchCacheSize that of the others (0: the cache's default).
	// A size of 0 in WatchCacheSizes turns the cache off for that resource.
	WatchCacheSizes       map[string]int
	DefaultWatchCacheSize int
	// WatchCacheMetrics, when set, count the caches' work (the server registers them).
	WatchCacheMetrics *storage.CacherMetrics
	// WrapStorage, when set, wraps each built-in kind's storage (after its watch cache) for
	// tests that count or hold up the calls through it.
	WrapStorage func(schema.GroupResource, storage.Interface) storage.Interface
	// StorageMediaType is how objects are written to etcd: StorageProtobuf (the default, as
	// kube-apiserver), StorageJSON or StorageYAML. Every encoding is always read. An unknown
	// type (callers check it with CheckStorageMediaType) is logged and the default used.
	StorageMediaType string
	// Transformers, when set, gives the value transformer (encryption at rest, as
	// --encryption-provider-config configures it) of each resource's store by its group and
	// resource; nil for a resource stores its values as encoded.
	Transformers func(schema.GroupResource) storage.Transformer
}

// transformer returns the value transformer of gr's store, or nil.
func (c *Config) transformer(gr schema.GroupResource) storage.Transformer {
	if c.Transformers == nil {
		return nil
	}
	return c.Transformers(gr)
}

// New builds the stores of every built-in kind on one etcd client.
func New(client *clientv3.Client, cfg Config) *Registry {
	if cfg.Prefix == "" {
		cfg.Prefix = "/registry"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Registry{byGR: map[schema.GroupResource]*registry.Resource{}, log: cfg.Logger, terminating: map[string]bool{}, ctx: context.Background(),
		client: client, cfg: cfg}
	r.informers = informer.NewFactory(r.informerSource, cfg.Logger)
	r.crd = customresources.NewManager(customresources.Config{Client: client, Prefix: cfg.Prefix, BookmarkInterval: cfg.BookmarkInterval, Informers: r.informers,
		AttemptTimeout: cfg.AttemptTimeout, Transformer: cfg.Transformers, NewCacher: r.newCacher, NamespaceCheck: r.namespaceAccepts,
		Builtin: func(gr schema.GroupResource) *registry.Resource { return r.byGR[gr] }, ServesBuiltin: r.servesBuiltin, Logger: cfg.Logger})
	if err := registry.CheckStorageMediaType(cfg.StorageMediaType); cfg.StorageMediaType != "" && err != nil {
		cfg.Logger.Error("registry: unknown storage media type, writing protobuf", "err", err)
		cfg.StorageMediaType = registry.StorageProtobuf
	}
	for _, k := range Kinds() {
		codec, gvk, newFunc, err := registry.KindStorageCodec(k, cfg.StorageMediaType)
		if err != nil { // not reached: the media type is checked above; storage then writes JSON
			cfg.Logger.Error("registry: no storage codec", "kind", gvk, "err", err)
		}
		var st storage.Interface = storage.New(client, storage.Config{Prefix: cfg.Prefix, Codec: codec, NewFunc: newFunc, BookmarkInterval: cfg.BookmarkInterval, AttemptTimeout: cfg.AttemptTimeout,
			Transformer: cfg.transformer(k.GroupResource())})
		if c := r.newCacher(st.(*storage.Etcd3), k, gvk); c != nil {
			st = c
			r.cachers = append(r.cachers, c)
		}
		if cfg.WrapStorage != nil {
			st = cfg.WrapStorage(k.GroupResource(), st)
		}
		res := registry.NewResource(k, st)
		r.Resources = append(r.Resources, res)
		if r.byGR[k.GroupResource()] == nil { // the stored version; others convert
			r.byGR[k.GroupResource()] = res
		}
	}
	ns := r.byGR[schema.GroupResource{Resource: "namespaces"}].Store
	ns.SetOnTerminate(r.terminateNamespace)
	for _, res := range r.Resources {
		if res.Store.Definition().Namespaced {
			res.Store.SetNamespaceCheck(r.namespaceAccepts)
		}
	}
	ranges := cfg.ServiceRanges
	if ranges.ClusterIPRange == "" {
		ranges.ClusterIPRange = core.DefaultServiceClusterIPRange
	}
	if ranges.NodePortRange == "" {
		ranges.NodePortRange = core.DefaultServiceNodePortRange
	}
	newIP := func() runtime.Object { return &networkingv1.IPAddress{} }
	newRange := func() runtime.Object { return &corev1.RangeAllocation{} }
	ipCodec, _ := registry.NewStorageCodec(cfg.StorageMediaType, networkingv1.SchemeGroupVersion.WithKind("IPAddress"), newIP)
	rangeCodec, _ := registry.NewStorageCodec(cfg.StorageMediaType, corev1.SchemeGroupVersion.WithKind("RangeAllocation"), newRange)
	// As upstream, the allocators' stores take the transformers of their resources.
	ips := storage.New(client, storage.Config{Prefix: cfg.Prefix, Codec: ipCodec, NewFunc: newIP, AttemptTimeout: cfg.AttemptTimeout,
		Transformer: cfg.transformer(schema.GroupResource{Group: networkingv1.GroupName, Resource: "ipaddresses"})})
	ports := storage.New(client, storage.Config{Prefix: cfg.Prefix, Codec: rangeCodec, NewFunc: newRange, AttemptTimeout: cfg.AttemptTimeout,
		Transformer: cfg.transformer(schema.GroupResource{Resource: "servicenodeportallocations"})})
	//lint:ignore SA1019 the masterleases values are core/v1 Endpoints, as upstream writes them
	r.endpointsCodec, _ = registry.NewStorageCodec(cfg.StorageMediaType, corev1.SchemeGroupVersion.WithKind("Endpoints"), func() runtime.Object { return &corev1.Endpoints{} })
	alloc, err := core.NewServiceAllocator(ips, ports, "ipaddresses", "services/nodeports", ranges, r.log)
	if err != nil {
		r.log.Error("bad service ranges, using the defaults", "err", err)
		alloc, _ = core.NewServiceAllocator(ips, ports, "ipaddresses", "services/nodeports",
			core.ServiceRanges{ClusterIPRange: core.DefaultServiceClusterIPRange, NodePortRange: core.DefaultServiceNodePortRange}, r.log)
	}
	r.serviceAlloc = alloc
	r.byGR[servicesGR].Store.SetAllocator(alloc)
	r.addViewsAndSubresources()
	r.namespaces = informer.For[*corev1.Namespace](r.informers, namespacesGR)
	return r
}

// informerSource is where the shared informers read gr: its store (for a custom resource,
// its storage version's); nil when it is not served.
func (r *Registry) informerSource(gr schema.GroupResource) informer.Source {
	if res := r.Resource(gr); res != nil {
		return res.Store
	}
	return nil
}

// Informers returns the shared informer factory of the apiserver's own controllers and
// caches; Start starts it.
func (r *Registry) Informers() *informer.Factory { return r.informers }

// newCacher returns the watch cache for kind k over st, whose objects are of kind gvk, or
// nil when the cache is off for it.
func (r *Registry) newCacher(st *storage.Etcd3, k *registry.Kind, gvk schema.GroupVersionKind) *storage.Cacher {
	if !r.cfg.WatchCache {
		return nil
	}
	size := r.cfg.DefaultWatchCacheSize
	name := k.GroupResource().String()
	if n, ok := r.cfg.WatchCacheSizes[name]; ok {
		if n == 0 {
			return nil
		}
		size = n
	}
	root := k.KeyRoot
	if root == "" {
		root = k.Plural
	}
	return storage.NewCacher(st, storage.CacherConfig{Resource: name, KeyRoot: root, HistoryCapacity: size,
		BookmarkInterval: r.cfg.BookmarkInterval, Metrics: r.cfg.WatchCacheMetrics, Logger: r.log,
		// Shared objects get their kind once, here: the store's setKind then writes nothing.
		Prepare: func(obj runtime.Object) { obj.GetObjectKind().SetGroupVersionKind(gvk) },
		// The store's predicates match with k.Attrs too (registry.Store).
		Attrs: k.Attrs, IndexFields: cacheIndexFields[k.GroupResource()]})
}

// cacheIndexFields are the fields, besides metadata.name, whose exact values the watch
// cache keeps watchers by: upstream's trigger fields (pods by spec.nodeName, each node's
// kubelet).
var cacheIndexFields = map[schema.GroupResource][]string{{Resource: "pods"}: {"spec.nodeName"}}

// RepairServices runs one pass of the Service IP and NodePort repair (Start runs it every
// few minutes): reservations no Service holds are freed when two passes in a row found them.
func (r *Registry) RepairServices(ctx context.Context) error {
	return r.serviceAlloc.Repair(ctx, r.byGR[servicesGR].Store)
}

// Resource returns the resource for gr (a custom resource: its storage version), or nil.
func (r *Registry) Resource(gr schema.GroupResource) *registry.Resource {
	if res := r.byGR[gr]; res != nil {
		return res
	}
	return r.crd.Resource(gr)
}

func (r *Registry) namespaceStore() *registry.Store { return r.byGR[namespacesGR].Store }

// namespaceAccepts refuses content for missing or terminating namespaces.
func (r *Registry) namespaceAccepts(ctx context.Context, ns string) error {
	if ns == "" {
		return apierrors.NewBadRequest("a namespace is required for namespaced resources")
	}
	// The informer is trusted only while it watches: what happened between a watch's end and
	// the next list is unknown.
	if n, ok := r.namespaces.Get("", ns); ok && r.namespaces.Watching() && !namespaceTerminating(n) {
		return nil
	}
	// Not (yet) in the cache, or on its way out: ask etcd.
	obj, err := r.namespaceStore().Get(ctx, "", ns, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	if namespaceTerminating(obj.(*corev1.Namespace)) {
		return &registry.NamespaceTerminatingError{Namespace: ns}
	}
	return nil
}

func namespaceTerminating(n *corev1.Namespace) bool {
	return n.DeletionTimestamp != nil || n.Status.Phase == corev1.NamespaceTerminating
}

// Start starts the watch caches and the shared informers, creates the standard namespaces,
// starts finishing every namespace that is or becomes terminating (whichever apiserver
// marked it), serving the custom resources and compaction when configured. All of it stops
// when ctx ends. The informers asked for later (authz, admission, aggregator) start at once.
func (r *Registry) Start(ctx context.Context) error {
	r.ctx = ctx
	for _, c := range r.cachers {
		c.Start(ctx)
	}
	r.startNamespaceController()
	r.crd.Start(ctx) // its handlers before the first list
	r.informers.Start(ctx)
	if err := r.namespaces.WaitForSync(ctx); err != nil {
		return err
	}
	if err := r.ensureSystemNamespaces(ctx); err != nil {
		return err
	}
	if err := r.createBootstrapPriorityClasses(ctx); err != nil {
		return err
	}
	r.wg.Add(2)
	go r.keepSystemNamespaces(ctx)
	go func() {
		defer r.wg.Done()
		<-ctx.Done()
		for _, c := range r.cachers {
			c.Stop()
		}
		for _, res := range r.CustomResources() {
			res.StopCache()
		}
		r.sessMu.Lock()
		defer r.sessMu.Unlock()
		if r.sess != nil {
			r.sess.Orphan() // its lease runs out on its own; the client may be closing
		}
	}()
	repairEvery := r.cfg.ServiceRepairInterval
	if repairEvery == 0 {
		repairEvery = 3 * time.Minute
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for repairEvery > 0 {
			if err := r.RepairServices(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("service IP and port repair failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(repairEvery):
			}
		}
	}()
	if r.cfg.CompactionInterval > 0 {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			storage.RunCompactor(ctx, r.client, r.cfg.CompactionInterval, r.log)
		}()
	}
	return nil
}

// Wait waits for background namespace cleanups to end.
func (r *Registry) Wait() {
	r.wg.Wait()
	r.crd.Wait()
	r.informers.Wait()
}

// OnCustomResourcesChange registers fn, called (serially) after the set of served custom
// resources changed. Call it before Start.
func (r *Registry) OnCustomResourcesChange(fn func()) { r.crd.OnCustomResourcesChange(fn) }

// CustomResources returns the resources served for CustomResourceDefinitions now, sorted by
// group, resource and version (the storage version of each first).
func (r *Registry) CustomResources() []*registry.Resource { return r.crd.CustomResources() }

// servesBuiltin reports whether a built-in resource or view is served at group, version
// and plural.
func (r *Registry) servesBuiltin(group, version, plural string) bool {
	same := func(n registry.Names) bool { return n.Group == group && n.Version == version && n.Plural == plural }
	for _, res := range r.Resources {
		if same(res.Store.Definition().Names) {
			return true
		}
	}
	for _, v := range r.Views {
		if same(v.Names) {
			return true
		}
	}
	return false
}

var (
	servicesGR   = schema.GroupResource{Resource: "services"}
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
)
