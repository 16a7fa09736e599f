// Package registry is the core of the API kinds: what a kind is (Kind: names, scope,
// Strategy), the generic Store that serves any kind over storage, the scheme and storage
// codecs, and the validation helpers the kinds share. The built-in kinds live in the
// packages below it, one per API group; pkg/apiserver/controlplane assembles them. The
// endpoints package turns the verbs a store implements into HTTP routes; nothing here
// knows HTTP.
package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Names describes one resource as discovery shows it.
type Names struct {
	Group, Version   string
	Kind, ListKind   string
	Plural, Singular string
	ShortNames       []string
	Categories       []string
	Namespaced       bool
}

// GroupVersion of the resource.
func (n *Names) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: n.Group, Version: n.Version}
}

// GroupResource of the resource.
func (n *Names) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: n.Group, Resource: n.Plural}
}

// GVK of the resource's kind.
func (n *Names) GVK() schema.GroupVersionKind { return n.GroupVersion().WithKind(n.Kind) }

// Storage is anything the installer can serve: a main resource or a subresource.
type Storage interface {
	// New returns an empty object of the kind this storage serves.
	New() runtime.Object
	// Kind is the group, version and kind of New() as clients see it.
	Kind() schema.GroupVersionKind
}

// Getter reads one object.
type Getter interface {
	Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error)
}

// Lister reads a collection.
type Lister interface {
	NewList() runtime.Object
	List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error)
}

// ItemLister lists for callers that only encode the items: list has the list's kind and
// metadata (its items are not to be read: from the watch cache it has none), items are the
// objects, and when shared is true they are the watch cache's own, which must not be changed.
type ItemLister interface {
	ListItems(ctx context.Context, ns string, opts *metav1.ListOptions) (list runtime.Object, items []runtime.Object, shared bool, err error)
}

// Creater creates objects. name is set for subresources (binding).
type Creater interface {
	Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error)
}

// TransformFunc computes the new object from the current one (nil when absent).
type TransformFunc func(ctx context.Context, current runtime.Object) (runtime.Object, error)

// Updater replaces an object with what transform makes of the current one.
// PUT passes a transform returning the request body, PATCH one applying the patch.
type Updater interface {
	Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (obj runtime.Object, created bool, err error)
}

// GracefulDeleter deletes one object. deleted is false when the object
// stays with a deletionTimestamp (finalizers pending, namespace terminating).
type GracefulDeleter interface {
	Delete(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) (obj runtime.Object, deleted bool, err error)
}

// CollectionDeleter deletes what a list selects.
type CollectionDeleter interface {
	DeleteCollection(ctx context.Context, ns string, opts *metav1.DeleteOptions, listOpts *metav1.ListOptions) (runtime.Object, error)
}

// Watcher streams changes.
type Watcher interface {
	Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error)
}

// DryRun reports whether opts ask for dryRun=All.
func DryRun(dryRun []string) bool {
	for _, d := range dryRun {
		if d == metav1.DryRunAll {
			return true
		}
	}
	return false
}

// View is a served resource with no storage of its own: bindings (writes pods),
// componentstatuses (probes components) and events.k8s.io/v1 events (the core events in
// another shape). Namespace cleanup skips views: what they show is stored elsewhere.
type View struct {
	Names        Names
	Storage      Storage
	Subresources map[string]Storage
}

// Resource is one served resource: its store and its subresources.
type Resource struct {
	Store        *Store
	Subresources map[string]Storage // "status", "scale", "binding"
}

// Resources finds served resources by group and resource (a custom resource: its storage
// version), nil for none; the controlplane's Registry is one.
type Resources interface {
	Resource(gr schema.GroupResource) *Resource
}
