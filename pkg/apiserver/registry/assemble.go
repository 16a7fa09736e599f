package registry

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewStorageCodec returns the codec that writes objects of kind gvk to etcd as mediaType
// (StorageProtobuf when empty) and reads every encoding.
func NewStorageCodec(mediaType string, gvk schema.GroupVersionKind, newFunc func() runtime.Object) (storage.Codec, error) {
	return newStorageCodec(mediaType, gvk, newFunc)
}

// KindStorageCodec returns the codec of kind k's values in etcd, written as mediaType
// unless the kind is always stored as JSON, with the kind and constructor of the objects
// stored: those of k, or of the kind a StorageOf kind is stored as. A kind stored as itself
// is defaulted on read, as kube-apiserver does. On error the codec is nil.
func KindStorageCodec(k *Kind, mediaType string) (codec storage.Codec, gvk schema.GroupVersionKind, newFunc func() runtime.Object, err error) {
	newFunc, gvk = k.New, k.GVK()
	if k.StorageOf != nil {
		newFunc = k.StorageOf.StorageNew
		if gvks, _, err := Scheme.ObjectKinds(newFunc()); err == nil {
			gvk = gvks[0]
		}
	}
	if k.StorageJSON {
		mediaType = StorageJSON
	}
	codec, err = newStorageCodec(mediaType, gvk, newFunc)
	if sc, ok := codec.(*storageCodec); ok && k.StorageOf == nil {
		sc.defaults = k.Strategy.Default
	}
	return codec, gvk, newFunc, err
}

// NewResource serves kind k from st: its store, with the status and scale subresources the
// kind asks for. A StorageOf kind's objects are converted to and from the stored kind.
func NewResource(k *Kind, st storage.Interface) *Resource {
	if k.StorageOf != nil {
		st = &convertingStorage{inner: st, conv: k.StorageOf}
	}
	return NewResourceOf(&Store{kind: k, storage: st})
}

// NewResourceOf serves store s with the status and scale subresources its kind asks for.
func NewResourceOf(s *Store) *Resource {
	k := s.kind
	res := &Resource{Store: s, Subresources: map[string]Storage{}}
	if k.Status {
		res.Subresources["status"] = &StatusStore{store: s}
	}
	if k.Scale != nil {
		res.Subresources["scale"] = &ScaleStore{store: s, access: k.Scale}
	}
	return res
}

// SetNamespaceCheck installs the check that a namespace exists and accepts new content,
// for a namespaced kind. Call it before serving.
func (s *Store) SetNamespaceCheck(fn func(ctx context.Context, ns string) error) { s.namespaces = fn }

// SetOnTerminate installs what is told about objects marked for deletion (namespace
// cleanup). Call it before serving.
func (s *Store) SetOnTerminate(fn func(ctx context.Context, obj runtime.Object)) { s.onTerminate = fn }

// SetAllocator installs what reserves the store's objects' shares of cluster-wide pools
// (Service IPs and ports). Call it before serving.
func (s *Store) SetAllocator(a Allocator) { s.alloc = a }

// SetAdmission installs the admission chain. Atomic: the server's own background writes
// may be under way.
func (s *Store) SetAdmission(chain admission.Interface) {
	s.adm.Store(&admissionChain{chain})
}

// StorageKey is the storage key of object ns/name (ns empty for cluster-scoped kinds).
func (s *Store) StorageKey(ns, name string) string { return s.key(ns, name) }

// SetAdmission installs the admission chain on res's store and on its subresources whose
// body is an object of its own (pods/binding, pods/eviction). Call it before serving, after
// every subresource is added.
func (res *Resource) SetAdmission(chain admission.Interface) {
	res.Store.SetAdmission(chain)
	for name, sub := range res.Subresources {
		c, ok := sub.(Creater)
		if !ok || !objectSubresources[name] {
			continue
		}
		if _, wrapped := sub.(*admittedCreater); wrapped {
			continue
		}
		res.Subresources[name] = &admittedCreater{Storage: sub, inner: c, adm: chain,
			resource: res.Store.kind.GroupVersion().WithResource(res.Store.kind.Plural), sub: name}
	}
}

// SetAdmission installs the admission chain on a create-only view, one whose body is an
// object of its own (the legacy bindings resource): admission sees its object under the
// view's resource, as upstream's. Views that also read (events.k8s.io's events) keep their
// storage as it is. Call it before serving.
func (v *View) SetAdmission(chain admission.Interface) {
	c, ok := v.Storage.(Creater)
	if !ok {
		return
	}
	if _, reads := v.Storage.(Getter); reads {
		return
	}
	if _, lists := v.Storage.(Lister); lists {
		return
	}
	if _, wrapped := v.Storage.(*admittedCreater); wrapped {
		return
	}
	v.Storage = &admittedCreater{Storage: v.Storage, inner: c, adm: chain,
		resource: schema.GroupVersionResource{Group: v.Names.Group, Version: v.Names.Version, Resource: v.Names.Plural}}
}

// NewSubresourceStore serves a subresource that reads the whole object and writes the part
// merge takes from the request (pods/ephemeralcontainers, pods/resize).
func NewSubresourceStore(s *Store, merge MergeFunc) Storage {
	return &subresourceStore{store: s, merge: merge}
}

// NewUpdateOnlyStore is NewSubresourceStore without GET (namespaces/finalize is PUT only
// upstream).
func NewUpdateOnlyStore(s *Store, merge MergeFunc) Storage {
	return &updateOnlyStore{store: s, merge: merge}
}

// GroupResource is the group and resource the store serves.
func (s *Store) GroupResource() schema.GroupResource { return s.gr() }

// UpdateSubresource updates object ns/name as a write to a subresource does: merge makes
// the object to store from the current one and the request transform returns.
func (s *Store) UpdateSubresource(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions, merge MergeFunc) (runtime.Object, bool, error) {
	return s.updateSubresource(ctx, ns, name, transform, opts, merge)
}

// PreconditionFailed is the conflict upstream's storage answers when a write's
// preconditions (a Binding's UID or resourceVersion) do not hold on object ns/name; its
// StorageError text names the object's etcd key.
func (s *Store) PreconditionFailed(ns, name, msg string) error {
	key := s.key(ns, name)
	if st, ok := s.storage.(interface{ FullKey(string) string }); ok {
		key = st.FullKey(key)
	}
	return apierrors.NewConflict(s.gr(), name, fmt.Errorf("StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: %s", key, msg))
}

// UpdateStatus updates object ns/name as a write to its status subresource does.
func (s *Store) UpdateStatus(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.update(ctx, ns, name, transform, opts, true)
}

// Released reports whether obj, being deleted, is held by nothing any more.
func (s *Store) Released(obj runtime.Object) bool { return s.released(obj) }

// DeleteIfReleased deletes obj (object ns/name) when it is being deleted and nothing holds
// it any more; it returns the deleted object and whether it did.
func (s *Store) DeleteIfReleased(ctx context.Context, ns, name string, obj runtime.Object) (runtime.Object, bool) {
	return s.deleteIfReleased(ctx, ns, name, obj)
}

// StopCache stops the watch cache under res's store, if it has one.
func (res *Resource) StopCache() {
	if c, ok := res.Store.storage.(interface{ Stop() }); ok {
		c.Stop()
	}
}
