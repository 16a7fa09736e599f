package informer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Sources finds the storage of a served resource; nil when it is not served.
type Sources func(gr schema.GroupResource) Source

// Factory hands out one shared informer per resource. Informers asked for before Start
// start there, in the order they were first asked for; one asked for later starts at once.
type Factory struct {
	sources Sources
	log     *slog.Logger

	mu      sync.Mutex
	order   []*shared // in the order asked for
	byGR    map[schema.GroupResource]*shared
	ctx     context.Context // Start's; nil before
	running sync.WaitGroup
}

// NewFactory returns a factory reading through sources; nothing runs until Start.
func NewFactory(sources Sources, log *slog.Logger) *Factory {
	if log == nil {
		log = slog.Default()
	}
	return &Factory{sources: sources, log: log, byGR: map[schema.GroupResource]*shared{}}
}

// For returns the shared informer of gr, typed: its lister sees the objects of gr that are
// T. On a nil factory it returns an informer of its own that never syncs and stays empty.
func For[T runtime.Object](f *Factory, gr schema.GroupResource) *Informer[T] {
	if f == nil {
		return &Informer[T]{s: newShared(gr, nil, slog.Default())}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byGR[gr]
	if s == nil {
		var src Source
		if f.sources != nil {
			src = f.sources(gr)
		}
		s = newShared(gr, src, f.log)
		f.byGR[gr] = s
		f.order = append(f.order, s)
		if f.ctx != nil {
			s.start(f.ctx, &f.running)
		}
	}
	return &Informer[T]{s: s}
}

// Start starts the informers asked for so far, in that order, and any asked for later,
// until ctx ends. Wait waits for them to stop.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx != nil {
		return
	}
	f.ctx = ctx
	for _, s := range f.order {
		s.start(ctx, &f.running)
	}
}

// Wait waits for the informers to stop after Start's context ended.
func (f *Factory) Wait() { f.running.Wait() }

// WaitForSync waits, in the order they were asked for, until every informer started has
// listed once and delivered that list to its handlers; it returns an error when ctx ends
// first, naming the informers not synced.
func (f *Factory) WaitForSync(ctx context.Context) error {
	for _, s := range f.started() {
		select {
		case <-s.synced:
		case <-ctx.Done():
			return fmt.Errorf("informers not synced: %w (%w)", f.Synced(), ctx.Err())
		}
	}
	return nil
}

// Synced reports nil when every informer started has synced, else an error naming the
// resources still waiting, in start order: the /readyz "informer-sync" check, worded as
// kube-apiserver's.
func (f *Factory) Synced() error {
	var waiting []string
	for _, s := range f.started() {
		if s.hasSynced() {
			continue
		}
		what := s.gr.String()
		if err := s.lastErr(); err != nil {
			what += " (" + err.Error() + ")"
		}
		waiting = append(waiting, what)
	}
	if len(waiting) == 0 {
		return nil
	}
	return fmt.Errorf("%d informers not started yet: [%s]", len(waiting), strings.Join(waiting, " "))
}

// Resources returns the resources with an informer, in the order they were asked for.
func (f *Factory) Resources() []schema.GroupResource {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]schema.GroupResource, 0, len(f.order))
	for _, s := range f.order {
		out = append(out, s.gr)
	}
	return out
}

func (f *Factory) started() []*shared {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.order), func(s *shared) bool { return !s.started.Load() })
}

// Informer is a typed view of a resource's shared informer.
type Informer[T runtime.Object] struct{ s *shared }

// Handler is what a controller is told, in order, from the informer's goroutine: keep the
// work short, or hand it to a goroutine or queue of its own. Any field may be nil. After a
// relist (the watch expired or ended) an object still there comes as an update, perhaps
// with old and cur equal, and one gone as a delete.
type Handler[T runtime.Object] struct {
	OnAdd    func(obj T)
	OnUpdate func(old, cur T)
	OnDelete func(obj T)
}

// OnChange is a Handler that calls fn after every add, update and delete.
func OnChange[T runtime.Object](fn func()) Handler[T] {
	return Handler[T]{OnAdd: func(T) { fn() }, OnUpdate: func(T, T) { fn() }, OnDelete: func(T) { fn() }}
}

// AddHandler registers h; the objects the informer already holds come to it as adds first.
// Objects that are not T are not passed on.
func (i *Informer[T]) AddHandler(h Handler[T]) {
	var ev events
	if h.OnAdd != nil {
		ev.add = func(o runtime.Object) {
			if t, ok := o.(T); ok {
				h.OnAdd(t)
			}
		}
	}
	if h.OnUpdate != nil {
		ev.update = func(old, cur runtime.Object) {
			o, ok1 := old.(T)
			c, ok2 := cur.(T)
			if ok1 && ok2 {
				h.OnUpdate(o, c)
			}
		}
	}
	if h.OnDelete != nil {
		ev.del = func(o runtime.Object) {
			if t, ok := o.(T); ok {
				h.OnDelete(t)
			}
		}
	}
	i.s.addHandler(ev)
}

// Get returns the object ns/name ("" for a cluster-scoped one); callers must not change it.
func (i *Informer[T]) Get(ns, name string) (T, bool) {
	i.s.mu.RLock()
	defer i.s.mu.RUnlock()
	t, ok := i.s.objs[ns+"/"+name].(T)
	return t, ok
}

// List returns the objects of ns ("" for all); callers must not change them.
func (i *Informer[T]) List(ns string) []T {
	i.s.mu.RLock()
	defer i.s.mu.RUnlock()
	out := make([]T, 0, len(i.s.objs))
	for _, o := range i.s.objs {
		t, ok := o.(T)
		if !ok {
			continue
		}
		if a, err := meta.Accessor(o); err == nil && (ns == "" || a.GetNamespace() == ns) {
			out = append(out, t)
		}
	}
	return out
}

// HasSynced reports whether the first list is in and was handed to the handlers.
func (i *Informer[T]) HasSynced() bool { return i.s.hasSynced() }

// WaitForSync waits until HasSynced, or returns ctx's error.
func (i *Informer[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-i.s.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer %s not synced: %w", i.s.gr, ctx.Err())
	}
}

// Watching reports whether a watch follows the last list, so that the lister is as current
// as the watch: false between a watch's end and the next list (and before the first).
func (i *Informer[T]) Watching() bool { return i.s.watching.Load() }

// Resource is the resource the informer follows.
func (i *Informer[T]) Resource() schema.GroupResource { return i.s.gr }
