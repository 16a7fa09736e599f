// Package storage keeps API objects in etcd by key. It knows keys, revisions
// and JSON, never kinds: resourceVersion is the etcd mod revision of an object
// and the read revision of a list.
package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Interface is what the registry needs from a key-value store.
type Interface interface {
	// Create stores obj at key if nothing is there; out receives the stored object. obj
	// belongs to the store from the call on: out may share its maps and slices.
	Create(ctx context.Context, key string, obj, out runtime.Object) error
	// Get decodes the object at key into out.
	Get(ctx context.Context, key string, opts GetOptions, out runtime.Object) error
	// GetList fills listObj with the objects under the prefix key that match opts.
	GetList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) error
	// GuaranteedUpdate reads the object at key, calls tryUpdate and writes the
	// result if the object did not change meanwhile, retrying otherwise. The object
	// tryUpdate returns belongs to the store, as obj does in Create.
	GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool, precond *Preconditions, tryUpdate UpdateFunc) error
	// Delete removes the object at key; out receives its last state.
	Delete(ctx context.Context, key string, out runtime.Object, precond *Preconditions, validate ValidateFunc) error
	// Watch streams changes under key starting after opts.ResourceVersion.
	Watch(ctx context.Context, key string, opts ListOptions) (watch.Interface, error)
	// Revision is the current revision of the store (a consistent read).
	Revision(ctx context.Context) (int64, error)
}

// CachedReader is implemented by a store that serves reads from a watch cache (Cacher): the
// objects it reads are the cache's stored states, so what is derived from one (the
// endpoints' encodings) may be kept by its key and resourceVersion.
type CachedReader interface {
	Interface
	// GetListItems is GetList for callers that only read the items: listObj gets the
	// list's metadata, and when the cache serves the list its items are returned as the
	// cache's own objects (shared is true: they must not be changed), not copied into
	// listObj. Otherwise they are listObj's.
	GetListItems(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) (items []runtime.Object, shared bool, err error)
}

// UpdateFunc computes the new object from the current one. Returning an error aborts.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// ValidateFunc may veto a deletion after reading the current object.
type ValidateFunc func(ctx context.Context, current runtime.Object) error

// Preconditions must hold for an update or a delete to go ahead.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

func (p *Preconditions) check(key string, obj runtime.Object) error {
	if p == nil {
		return nil
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if p.UID != nil && *p.UID != a.GetUID() {
		return &Error{Code: ErrCodeInvalidObj, Key: key, Msg: fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, a.GetUID())}
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != a.GetResourceVersion() {
		return &Error{Code: ErrCodeConflict, Key: key, Msg: fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, a.GetResourceVersion())}
	}
	return nil
}

// GetOptions qualify a Get.
type GetOptions struct {
	IgnoreNotFound  bool   // return a zero out instead of a NotFound error
	ResourceVersion string // "" = latest (linearizable), "0" = any (local read), N = not older than N
}

// Predicate selects objects by labels and fields.
type Predicate struct {
	Label labels.Selector
	Field fields.Selector
	// GetAttrs returns the labels and selectable fields of an object.
	GetAttrs func(obj runtime.Object) (labels.Set, fields.Set, error)
}

// Empty reports whether the predicate matches everything.
func (p Predicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether obj satisfies the predicate.
func (p Predicate) Matches(obj runtime.Object) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	var ls labels.Set
	var fs fields.Set
	if p.GetAttrs != nil {
		var err error
		ls, fs, err = p.GetAttrs(obj)
		if err != nil {
			return false, err
		}
	} else {
		a, err := meta.Accessor(obj)
		if err != nil {
			return false, err
		}
		ls = labels.Set(a.GetLabels())
		fs = fields.Set{"metadata.name": a.GetName(), "metadata.namespace": a.GetNamespace()}
	}
	return p.MatchesAttrs(ls, fs), nil
}

// MatchesAttrs reports whether an object with labels ls and fields fs satisfies the
// predicate.
func (p Predicate) MatchesAttrs(ls labels.Set, fs fields.Set) bool {
	if p.Label != nil && !p.Label.Matches(ls) {
		return false
	}
	return p.Field == nil || p.Field.Matches(fs)
}

// exactField returns the value the predicate's field selector requires field to equal,
// if it does.
func (p Predicate) exactField(field string) (string, bool) {
	if p.Field == nil {
		return "", false
	}
	return p.Field.RequiresExactMatch(field)
}

// ListOptions qualify a GetList or a Watch.
type ListOptions struct {
	ResourceVersion      string
	ResourceVersionMatch string // "", "NotOlderThan" or "Exact"
	Predicate            Predicate
	Limit                int64
	Continue             string
	Recursive            bool // key is a prefix (list) rather than one object
	AllowBookmarks       bool // Watch only
	SendInitialEvents    bool // Watch only: synthetic ADDED events for the current state first
}

// Codec turns objects into stored bytes and back.
type Codec interface {
	Encode(obj runtime.Object) ([]byte, error)
	Decode(data []byte, into runtime.Object) error
}

// JSONCodec stores objects as JSON exactly as encoding/json writes them.
type JSONCodec struct{}

func (JSONCodec) Encode(obj runtime.Object) ([]byte, error) { return json.Marshal(obj) }

func (JSONCodec) Decode(data []byte, into runtime.Object) error {
	resetObject(into)
	return json.Unmarshal(data, into)
}

func resetObject(obj runtime.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().Set(reflect.Zero(v.Elem().Type()))
	}
}

// ParseResourceVersion parses an object or list resourceVersion; "" is 0.
func ParseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, &Error{Code: ErrCodeInvalidRV, Msg: fmt.Sprintf("invalid resource version %q", rv)}
	}
	return n, nil
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }
