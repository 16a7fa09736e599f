package registry

import (
	"context"
	"reflect"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Conversion serves a kind at one version out of storage kept at another.
type Conversion struct {
	// StorageNew and StorageNewList make empty objects of the stored version.
	StorageNew, StorageNewList func() runtime.Object
	// ToStorage converts a served object to the stored version; FromStorage back.
	ToStorage, FromStorage func(runtime.Object) runtime.Object
}

// convertingStorage presents storage of one version as storage of another: every object
// going in is converted to the stored version and every object coming out back, so the
// generic store above it (resourceVersions, preconditions, watch) works unchanged.
type convertingStorage struct {
	inner storage.Interface
	conv  *Conversion
}

// assign copies src into the object dst points to (both of the served type).
func assign(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

func (c *convertingStorage) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	stored := c.conv.StorageNew()
	if err := c.inner.Create(ctx, key, c.conv.ToStorage(obj), stored); err != nil {
		return err
	}
	if out != nil {
		assign(out, c.conv.FromStorage(stored))
	}
	return nil
}

func (c *convertingStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	stored := c.conv.StorageNew()
	if err := c.inner.Get(ctx, key, opts, stored); err != nil {
		return err
	}
	assign(out, c.conv.FromStorage(stored))
	return nil
}

// predicate evaluates the served version's predicate on stored objects.
func (c *convertingStorage) predicate(p storage.Predicate) storage.Predicate {
	if p.GetAttrs != nil {
		get := p.GetAttrs
		p.GetAttrs = func(obj runtime.Object) (labels.Set, fields.Set, error) {
			return get(c.conv.FromStorage(obj))
		}
	}
	return p
}

func (c *convertingStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	opts.Predicate = c.predicate(opts.Predicate)
	stored := c.conv.StorageNewList()
	if err := c.inner.GetList(ctx, key, opts, stored); err != nil {
		return err
	}
	items, err := meta.ExtractList(stored)
	if err != nil {
		return err
	}
	out := make([]runtime.Object, len(items))
	for i, it := range items {
		out[i] = c.conv.FromStorage(it)
	}
	if err := meta.SetList(listObj, out); err != nil {
		return err
	}
	sl, err := meta.ListAccessor(stored)
	if err != nil {
		return err
	}
	dl, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	dl.SetResourceVersion(sl.GetResourceVersion())
	dl.SetContinue(sl.GetContinue())
	dl.SetRemainingItemCount(sl.GetRemainingItemCount())
	return nil
}

func (c *convertingStorage) GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	stored := c.conv.StorageNew()
	err := c.inner.GuaranteedUpdate(ctx, key, stored, ignoreNotFound, precond, func(cur runtime.Object) (runtime.Object, error) {
		next, err := tryUpdate(c.conv.FromStorage(cur))
		if err != nil || next == nil {
			return next, err
		}
		return c.conv.ToStorage(next), nil
	})
	if err != nil {
		return err
	}
	assign(out, c.conv.FromStorage(stored))
	return nil
}

func (c *convertingStorage) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	var v storage.ValidateFunc
	if validate != nil {
		v = func(ctx context.Context, cur runtime.Object) error { return validate(ctx, c.conv.FromStorage(cur)) }
	}
	stored := c.conv.StorageNew()
	if err := c.inner.Delete(ctx, key, stored, precond, v); err != nil {
		return err
	}
	if out != nil {
		assign(out, c.conv.FromStorage(stored))
	}
	return nil
}

// DeleteCorrupt is storage.CorruptDeleter's: the stored kind's key is the same.
func (c *convertingStorage) DeleteCorrupt(ctx context.Context, key string, dryRun bool) error {
	cd, ok := c.inner.(storage.CorruptDeleter)
	if !ok {
		return ErrNoCorruptDeleter
	}
	return cd.DeleteCorrupt(ctx, key, dryRun)
}

func (c *convertingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	opts.Predicate = c.predicate(opts.Predicate)
	w, err := c.inner.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	storedType := reflect.TypeOf(c.conv.StorageNew())
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Object != nil && reflect.TypeOf(ev.Object) == storedType {
			ev.Object = c.conv.FromStorage(ev.Object)
		}
		return ev, true
	}), nil
}

func (c *convertingStorage) Revision(ctx context.Context) (int64, error) {
	return c.inner.Revision(ctx)
}
