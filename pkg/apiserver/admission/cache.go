package admission

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Source is what a Cache reads: a registry store's List and Watch.
type Source interface {
	List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error)
}

// Cache is a local copy of one kind kept in step with storage by a watch, like client-go's
// informer, so that plugins read what they need without a storage read per request.
type Cache[T runtime.Object] struct {
	src    Source
	log    *slog.Logger
	synced chan struct{}
	// OnChange, when set before Start, is called (without locks held) after every change.
	OnChange func()

	mu   sync.RWMutex
	objs map[string]T // by namespace/name
}

// NewCache returns a cache of src; Start fills it.
func NewCache[T runtime.Object](src Source, log *slog.Logger) *Cache[T] {
	if log == nil {
		log = slog.Default()
	}
	return &Cache[T]{src: src, log: log, synced: make(chan struct{}), objs: map[string]T{}}
}

// Start lists and then watches until ctx ends; it returns once the first list is in
// (or ctx ends).
func (c *Cache[T]) Start(ctx context.Context) {
	go c.run(ctx)
	select {
	case <-c.synced:
	case <-ctx.Done():
	}
}

// List returns the cached objects of ns ("" for all namespaces); callers must not change them.
func (c *Cache[T]) List(ns string) []T {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]T, 0, len(c.objs))
	for _, o := range c.objs {
		if a, _ := meta.Accessor(o); ns == "" || a.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out
}

// Get returns the cached object ns/name; callers must not change it.
func (c *Cache[T]) Get(ns, name string) (T, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.objs[ns+"/"+name]
	return o, ok
}

func cacheKey(o runtime.Object) string {
	a, _ := meta.Accessor(o)
	return a.GetNamespace() + "/" + a.GetName()
}

func (c *Cache[T]) run(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		rv, err := c.relist(ctx)
		if err == nil {
			if first {
				close(c.synced)
				first = false
			}
			err = c.follow(ctx, rv)
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Debug("admission cache: relisting", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cache[T]) relist(ctx context.Context) (string, error) {
	list, err := c.src.List(ctx, "", &metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	objs := make(map[string]T, len(items))
	for _, it := range items {
		if t, ok := it.(T); ok {
			objs[cacheKey(t)] = t
		}
	}
	c.mu.Lock()
	c.objs = objs
	c.mu.Unlock()
	c.changed()
	la, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return la.GetResourceVersion(), nil
}

func (c *Cache[T]) changed() {
	if c.OnChange != nil {
		c.OnChange()
	}
}

func (c *Cache[T]) follow(ctx context.Context, rv string) error {
	w, err := c.src.Watch(ctx, "", &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
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
				return errWatchClosed
			}
			t, isT := ev.Object.(T)
			switch {
			case ev.Type == watch.Error:
				return errWatchClosed
			case !isT:
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				c.mu.Lock()
				c.objs[cacheKey(t)] = t
				c.mu.Unlock()
				c.changed()
			case ev.Type == watch.Deleted:
				c.mu.Lock()
				delete(c.objs, cacheKey(t))
				c.mu.Unlock()
				c.changed()
			}
		}
	}
}

type watchClosed struct{}

func (watchClosed) Error() string { return "watch closed" }

var errWatchClosed error = watchClosed{}
