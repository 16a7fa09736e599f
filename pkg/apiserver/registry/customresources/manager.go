// Package customresources serves custom resources: the CustomResourceDefinition kind and,
// for each established definition, the stores of its versions, kept in step with the
// definitions in etcd on every apiserver (names accepted, established, cleanup on delete).
package customresources

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"github.com/hacp/hacp/pkg/apiserver/webhookclient"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Config is what the Manager needs from the registry that serves the built-in kinds.
type Config struct {
	Client           *clientv3.Client
	Prefix           string // etcd key prefix
	BookmarkInterval time.Duration
	AttemptTimeout   time.Duration
	// Transformer, when set, gives the value transformer of a resource's store.
	Transformer func(schema.GroupResource) storage.Transformer
	// NewCacher returns the watch cache for kind k over st, whose objects are of kind gvk,
	// or nil when the cache is off for it.
	NewCacher func(st *storage.Etcd3, k *registry.Kind, gvk schema.GroupVersionKind) *storage.Cacher
	// NamespaceCheck refuses content for missing or terminating namespaces.
	NamespaceCheck func(ctx context.Context, ns string) error
	// Builtin returns a built-in resource (customresourcedefinitions, services, endpoints),
	// nil when not served.
	Builtin func(schema.GroupResource) *registry.Resource
	// ServesBuiltin reports whether a built-in resource or view is served at group, version
	// and plural: a definition may not take its place.
	ServesBuiltin func(group, version, plural string) bool
	Logger        *slog.Logger
	// Informers gives the shared informer of the definitions.
	Informers *informer.Factory
}

func (c *Config) transformer(gr schema.GroupResource) storage.Transformer {
	if c.Transformer == nil {
		return nil
	}
	return c.Transformer(gr)
}

// Manager serves the custom resources of the CustomResourceDefinitions in etcd.
type Manager struct {
	cfg    Config
	log    *slog.Logger
	custom customResources
	ctx    context.Context // Start's; background before
	wg     sync.WaitGroup

	admission atomic.Pointer[admission.Interface] // SetAdmission's, for stores made later

	convOnce    sync.Once
	convClients *webhookclient.Clients // of CRDs' conversion webhooks
}

// NewManager returns a Manager that serves nothing until Start.
func NewManager(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{cfg: cfg, log: cfg.Logger, ctx: context.Background()}
}

// Start follows the definitions through the shared informer until ctx ends (Wait waits for
// that); call it before the informers start.
func (r *Manager) Start(ctx context.Context) {
	r.ctx = ctx
	r.startCRDController(ctx)
}

// Wait waits for the Manager's background work (following definitions, cleanups) to end.
func (r *Manager) Wait() { r.wg.Wait() }

// SetAdmission installs the admission chain on the stores of the custom resources served
// now and of those served later.
func (r *Manager) SetAdmission(chain admission.Interface) {
	r.custom.mu.Lock()
	defer r.custom.mu.Unlock()
	r.admission.Store(&chain)
	for _, list := range r.custom.served {
		for _, res := range list {
			res.Store.SetAdmission(chain)
		}
	}
}

// Resource returns the storage version of the custom resource gr, or nil.
func (r *Manager) Resource(gr schema.GroupResource) *registry.Resource { return r.customResource(gr) }

// StorageResources returns the storage version of every served custom resource.
func (r *Manager) StorageResources() []*registry.Resource { return r.customStorageResources() }

// Versions returns the served versions of custom resource gr, the storage version first.
func (r *Manager) Versions(gr schema.GroupResource) []*registry.Resource {
	r.custom.mu.RLock()
	defer r.custom.mu.RUnlock()
	return slices.Clone(r.custom.served[gr.Resource+"."+gr.Group])
}
