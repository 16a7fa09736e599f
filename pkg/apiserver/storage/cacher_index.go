package storage

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// attrs are an object's labels and selectable fields, computed once when the cache
// decodes it (CacherConfig.Attrs) and shared, like the object, by every list and watcher.
type attrs struct {
	labels labels.Set
	fields fields.Set
}

// attrsOf returns obj's attributes, or nil when the config computes none (or cannot: the
// predicates' own GetAttrs then decide, object by object, as without a cache).
func (c *Cacher) attrsOf(obj runtime.Object) *attrs {
	if c.cfg.Attrs == nil || obj == nil {
		return nil
	}
	ls, fs, err := c.cfg.Attrs(obj)
	if err != nil {
		return nil
	}
	return &attrs{labels: ls, fields: fs}
}

// match reports whether obj, whose attributes are at (nil: unknown), satisfies p.
func match(p Predicate, obj runtime.Object, at *attrs) bool {
	switch {
	case p.Empty():
		return true
	case at != nil:
		return p.MatchesAttrs(at.labels, at.fields)
	}
	return matches(p, obj)
}

// watcherSet is a cache's watchers, kept so that an event meets only the watchers that
// can want it, as upstream's cacher keeps its watchers by name scope and trigger value: a
// watcher whose field selector requires an exact value of an indexed field (metadata.name,
// then CacherConfig.IndexFields: pods' spec.nodeName) is kept by that value, and an event
// is offered to the watchers of its object's values (before and after the change) and to
// the unindexed rest. A thousand kubelets' pod watches by spec.nodeName and their watches
// of each mounted Secret by metadata.name no longer test every event of their resource.
type watcherSet struct {
	fields []string                                // indexed fields, in order of preference
	all    map[*cacheWatcher]struct{}              // every watcher
	rest   map[*cacheWatcher]struct{}              // those not indexed
	by     []map[string]map[*cacheWatcher]struct{} // per field: value -> watchers
}

func newWatcherSet(indexFields []string) *watcherSet {
	s := &watcherSet{fields: append([]string{"metadata.name"}, indexFields...),
		all: map[*cacheWatcher]struct{}{}, rest: map[*cacheWatcher]struct{}{}}
	s.by = make([]map[string]map[*cacheWatcher]struct{}, len(s.fields))
	for i := range s.by {
		s.by[i] = map[string]map[*cacheWatcher]struct{}{}
	}
	return s
}

// add keeps w, by the first indexed field its selector requires an exact value of when
// indexed is true (the cache computes attributes), else with the rest.
func (s *watcherSet) add(w *cacheWatcher, indexed bool) {
	s.all[w] = struct{}{}
	w.slot = -1
	if indexed {
		for i, f := range s.fields {
			if v, ok := w.pred.exactField(f); ok {
				w.slot, w.slotValue = i, v
				break
			}
		}
	}
	if w.slot < 0 {
		s.rest[w] = struct{}{}
		return
	}
	m := s.by[w.slot][w.slotValue]
	if m == nil {
		m = map[*cacheWatcher]struct{}{}
		s.by[w.slot][w.slotValue] = m
	}
	m[w] = struct{}{}
}

// remove forgets w; removing a watcher twice is harmless.
func (s *watcherSet) remove(w *cacheWatcher) {
	if _, ok := s.all[w]; !ok {
		return
	}
	delete(s.all, w)
	if w.slot < 0 {
		delete(s.rest, w)
		return
	}
	m := s.by[w.slot][w.slotValue]
	delete(m, w)
	if len(m) == 0 {
		delete(s.by[w.slot], w.slotValue)
	}
}

// offer calls fn with each watcher ev may concern: every watcher when ev's attributes
// are unknown. fn must not add or remove watchers.
func (s *watcherSet) offer(ev *cacheEvent, fn func(*cacheWatcher)) {
	each := func(m map[*cacheWatcher]struct{}) {
		for w := range m {
			fn(w)
		}
	}
	if ev.attrs == nil || (ev.prev != nil && ev.prevAttrs == nil) {
		each(s.all)
		return
	}
	each(s.rest)
	for i, f := range s.fields {
		if len(s.by[i]) == 0 {
			continue
		}
		v := ev.attrs.fields[f]
		each(s.by[i][v])
		if ev.prevAttrs != nil {
			if pv := ev.prevAttrs.fields[f]; pv != v {
				each(s.by[i][pv])
			}
		}
	}
}
