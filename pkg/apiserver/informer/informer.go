// Package informer keeps local copies of resources in step with storage for the
// apiserver's own controllers and caches, as client-go's shared informers do for the
// controller-manager but in process: one list and one watch per resource, shared by every
// consumer through a Factory, with typed listers and add/update/delete handlers.
package informer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Source is what an informer reads: a registry store's List and Watch, called in process.
type Source interface {
	List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error)
}

// relistDelay is how long an informer waits before listing again after its watch ended
// (an expired resourceVersion, a closed watch) or a list failed.
const relistDelay = 100 * time.Millisecond

// events are the untyped handlers of one consumer; each may be nil.
type events struct {
	add    func(runtime.Object)
	update func(old, cur runtime.Object)
	del    func(runtime.Object)
}

// shared is the one informer of a resource: its store, its handlers and its list+watch.
type shared struct {
	gr  schema.GroupResource
	src Source // nil: the resource is not served; the informer never syncs
	log *slog.Logger

	mu   sync.RWMutex
	objs map[string]runtime.Object // by namespace/name

	// dispatch serialises the store's changes with their handlers, and AddHandler with
	// both: a handler sees every change once, in order.
	dispatch sync.Mutex
	handlers []events

	started  atomic.Bool
	synced   chan struct{} // closed once the first list is in and its events delivered
	watching atomic.Bool   // a watch follows the last list: the store is current
	err      atomic.Pointer[error]
}

func newShared(gr schema.GroupResource, src Source, log *slog.Logger) *shared {
	return &shared{gr: gr, src: src, log: log, objs: map[string]runtime.Object{}, synced: make(chan struct{})}
}

func key(o runtime.Object) string {
	a, err := meta.Accessor(o)
	if err != nil {
		return ""
	}
	return a.GetNamespace() + "/" + a.GetName()
}

// start runs the list+watch until ctx ends; it does nothing when already started.
func (s *shared) start(ctx context.Context, wg *sync.WaitGroup) {
	if !s.started.CompareAndSwap(false, true) {
		return
	}
	if s.src == nil {
		err := errors.New("no storage for " + s.gr.String())
		s.err.Store(&err)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.run(ctx)
	}()
}

// run lists, replaces the store, then watches from the list's revision, as client-go's
// reflector; after any watch error (410 Expired included) or a closed watch it lists again.
func (s *shared) run(ctx context.Context) {
	for ctx.Err() == nil {
		rv, err := s.relist(ctx)
		if err == nil {
			s.markSynced()
			err = s.follow(ctx, rv)
		}
		s.watching.Store(false)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.err.Store(&err)
		}
		s.log.Debug("informer: relisting", "resource", s.gr.String(), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(relistDelay):
		}
	}
}

func (s *shared) markSynced() {
	select {
	case <-s.synced:
	default:
		s.err.Store(nil)
		close(s.synced)
	}
}

// relist replaces the store with a fresh list and tells the handlers what changed: an add
// for an object new to the store, an update for every object still there (changed or not,
// as client-go's relist), a delete for one gone.
func (s *shared) relist(ctx context.Context) (string, error) {
	list, err := s.src.List(ctx, "", &metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	objs := make(map[string]runtime.Object, len(items))
	for _, it := range items {
		objs[key(it)] = it
	}
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.mu.Lock()
	old := s.objs
	s.objs = objs
	s.mu.Unlock()
	for k, o := range old {
		if _, ok := objs[k]; !ok {
			s.notify(watch.Deleted, o, nil)
		}
	}
	for k, o := range objs {
		s.notify(watch.Modified, o, old[k]) // an add when old[k] is nil
	}
	return la.GetResourceVersion(), nil
}

// follow applies the watch's events to the store until the watch ends or ctx ends.
func (s *shared) follow(ctx context.Context, rv string) error {
	w, err := s.src.Watch(ctx, "", &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	s.watching.Store(true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errWatchClosed
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				s.apply(ev.Type, ev.Object)
			case watch.Error:
				return watchError(ev.Object)
			}
		}
	}
}

// apply puts one watch event into the store and hands it to the handlers.
func (s *shared) apply(t watch.EventType, o runtime.Object) {
	k := key(o)
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.mu.Lock()
	old := s.objs[k]
	if t == watch.Deleted {
		delete(s.objs, k)
	} else {
		s.objs[k] = o
	}
	s.mu.Unlock()
	switch {
	case t == watch.Deleted && old != nil:
		s.notify(watch.Deleted, old, nil)
	case t == watch.Deleted: // not in the store: nothing to tell
	default:
		s.notify(watch.Modified, o, old)
	}
}

// notify calls every handler; cur is the object (for a delete, its last state), old the
// stored one it replaces (nil: an add). The caller holds dispatch.
func (s *shared) notify(t watch.EventType, cur, old runtime.Object) {
	for _, h := range s.handlers {
		switch {
		case t == watch.Deleted:
			if h.del != nil {
				h.del(cur)
			}
		case old == nil:
			if h.add != nil {
				h.add(cur)
			}
		default:
			if h.update != nil {
				h.update(old, cur)
			}
		}
	}
}

// addHandler registers h; the objects already in the store are handed to it as adds first.
func (s *shared) addHandler(h events) {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	s.handlers = append(s.handlers, h)
	if h.add == nil {
		return
	}
	for _, o := range s.snapshot() {
		h.add(o)
	}
}

func (s *shared) snapshot() []runtime.Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]runtime.Object, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o)
	}
	return out
}

func (s *shared) hasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// lastErr is why the informer has not synced yet, if known.
func (s *shared) lastErr() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

func watchError(o runtime.Object) error {
	if st, ok := o.(*metav1.Status); ok {
		return errors.New("watch: " + st.Message)
	}
	return errWatchClosed
}

type watchClosed struct{}

func (watchClosed) Error() string { return "watch closed" }

var errWatchClosed error = watchClosed{}
