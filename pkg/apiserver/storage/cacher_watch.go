package storage

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// cacheWatcher is one watch served by the cache. The cache's feed queues its events (under
// the cache's lock, so every watcher sees one order); the watcher's goroutine hands them to
// the client. A watcher whose queue is full is closed: it never holds up the feed or others.
type cacheWatcher struct {
	c         *Cacher
	key       string // full key: a prefix ending in "/" for a recursive watch, else one key
	recursive bool
	pred      Predicate
	bookmarks bool
	buffer    int

	// Where the cache's watcherSet keeps it: the indexed field's slot and the value its
	// selector requires, or slot -1.
	slot      int
	slotValue string

	// Set at registration, then owned by the feed (under c.mu).
	startRev     int64 // events after startRev are for this watcher
	lastRev      int64 // the revision of the last event offered: bookmarks never go back
	nextBookmark time.Time

	// The initial state, sent as ADDED events before anything queued.
	snapshot   *cacheTree
	snapRev    int64
	initialEnd bool // then the bookmark that ends the initial events

	mu     sync.Mutex
	queue  []watch.Event
	closed bool // no more events: the watcher ends after the queue

	notify   chan struct{}
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *cacheWatcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.c.mu.Lock()
		w.c.watchers.remove(w)
		w.c.mu.Unlock()
	})
}

func (w *cacheWatcher) signal() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// enqueue queues ev; over the buffer (when bounded) the watcher is closed instead and
// enqueue returns false.
func (w *cacheWatcher) enqueue(ev watch.Event, bounded bool) bool {
	w.mu.Lock()
	defer w.signal()
	defer w.mu.Unlock()
	if w.closed {
		return true // stopping anyway
	}
	if bounded && len(w.queue) >= w.buffer {
		w.closed = true
		return false
	}
	w.queue = append(w.queue, ev)
	return true
}

// terminate closes the watcher after what is queued (the cache was reset).
func (w *cacheWatcher) terminate() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
}

func (w *cacheWatcher) keyMatches(key string) bool {
	if w.recursive {
		return len(key) >= len(w.key) && key[:len(w.key)] == w.key
	}
	return key == w.key
}

// offer queues what ev means to this watcher; false when that overflowed it. c.mu is held.
func (w *cacheWatcher) offer(ev *cacheEvent) bool {
	if ev.rev <= w.startRev || !w.keyMatches(ev.key) {
		return true
	}
	w.lastRev = max(w.lastRev, ev.rev)
	out, ok := w.convert(ev)
	if !ok {
		return true
	}
	return w.enqueue(out, true)
}

// offerBookmark queues a bookmark at rev, unless the watcher is past it. c.mu is held.
func (w *cacheWatcher) offerBookmark(rev int64) bool {
	if rev < w.lastRev {
		return true
	}
	w.lastRev = rev
	return w.enqueue(watch.Event{Type: watch.Bookmark, Object: w.c.bookmark(rev, false)}, true)
}

// convert applies the watcher's predicate the upstream way: leaving the selection is
// DELETED, entering it ADDED (as etcdWatcher.convert).
func (w *cacheWatcher) convert(ev *cacheEvent) (watch.Event, bool) {
	p := w.pred
	switch ev.typ {
	case watch.Deleted, watch.Added:
		if !match(p, ev.obj, ev.attrs) {
			return watch.Event{}, false
		}
		return watch.Event{Type: ev.typ, Object: ev.obj}, true
	}
	curOK, prevOK := match(p, ev.obj, ev.attrs), match(p, ev.prev, ev.prevAttrs)
	switch {
	case curOK && prevOK:
		return watch.Event{Type: watch.Modified, Object: ev.obj}, true
	case curOK:
		return watch.Event{Type: watch.Added, Object: ev.obj}, true
	case prevOK:
		return watch.Event{Type: watch.Deleted, Object: ev.obj}, true
	}
	return watch.Event{}, false
}

func (w *cacheWatcher) run(ctx context.Context) {
	defer close(w.result)
	defer w.Stop()
	send := func(ev watch.Event) bool {
		select {
		case w.result <- ev:
			return true
		case <-w.done:
		case <-ctx.Done():
		}
		return false
	}
	if w.snapshot != nil {
		ok := true
		each := func(it *cacheItem) bool {
			if match(w.pred, it.obj, it.attrs) {
				ok = send(watch.Event{Type: watch.Added, Object: it.obj})
			}
			return ok
		}
		if w.recursive {
			ascend(w.snapshot, w.key, each)
		} else if it, found := w.snapshot.Get(&cacheItem{key: w.key}); found {
			each(it)
		}
		w.snapshot = nil
		if !ok {
			return
		}
		if w.initialEnd && !send(watch.Event{Type: watch.Bookmark, Object: w.c.bookmark(w.snapRev, true)}) {
			return
		}
	}
	for {
		w.mu.Lock()
		q, closed := w.queue, w.closed
		w.queue = nil
		w.mu.Unlock()
		for i := range q {
			if !send(q[i]) {
				return
			}
			q[i] = watch.Event{}
		}
		if len(q) > 0 {
			continue
		}
		if closed {
			return
		}
		select {
		case <-w.notify:
		case <-w.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// ascend calls fn on the items of tree under prefix, in key order, until fn returns false.
func ascend(tree *cacheTree, prefix string, fn func(*cacheItem) bool) {
	if end := prefixEnd(prefix); end != "" {
		tree.AscendRange(&cacheItem{key: prefix}, &cacheItem{key: end}, fn)
	} else {
		tree.AscendGreaterOrEqual(&cacheItem{key: prefix}, fn)
	}
}

// bookmark is a new (unshared) bookmark object at rev.
func (c *Cacher) bookmark(rev int64, initialEventsEnd bool) runtime.Object {
	obj := c.inner.cfg.NewFunc()
	_ = setRV(obj, rev)
	if initialEventsEnd {
		if a, err := metaAccessor(obj); err == nil {
			a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	if c.cfg.Prepare != nil {
		c.cfg.Prepare(obj)
	}
	return obj
}

// Watch serves a watch from the cache. resourceVersion "0" starts with the cache's state
// as ADDED events; "" does too, once the cache has seen etcd's current revision; N
// continues after N from the cache's history, or from etcd's when N is older than the
// cache's window (410 Expired when etcd compacted it); with sendInitialEvents, N starts
// with the state once the cache has seen N. Every event's object has been through the
// config's Prepare, whether the cache or etcd serves the watch.
func (c *Cacher) Watch(ctx context.Context, key string, opts ListOptions) (watch.Interface, error) {
	if !c.inRange(key) {
		return c.innerWatch(ctx, key, opts)
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	initial := rv == 0 || opts.SendInitialEvents
	switch {
	case opts.ResourceVersion == "":
		cur, err := c.inner.Revision(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.waitFresh(ctx, cur); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return c.innerWatch(ctx, key, opts)
		}
	case initial && rv > 0:
		if err := c.waitFresh(ctx, rv); errors.Is(err, errNotReady) {
			return c.innerWatch(ctx, key, opts)
		} else if err != nil {
			return nil, err
		}
	}
	full := c.inner.fullKey(key)
	if opts.Recursive && full[len(full)-1] != '/' {
		full += "/"
	}
	w := &cacheWatcher{c: c, key: full, recursive: opts.Recursive, pred: opts.Predicate, bookmarks: opts.AllowBookmarks,
		notify: make(chan struct{}, 1), result: make(chan watch.Event, 16), done: make(chan struct{})}
	c.mu.Lock()
	w.buffer = c.cfg.WatcherBuffer
	if !c.ready {
		c.mu.Unlock()
		return c.innerWatch(ctx, key, opts)
	}
	if initial {
		if c.current == nil {
			c.current = c.tree.Clone()
		}
		w.snapshot, w.snapRev, w.startRev = c.current, c.rev, c.rev
		w.initialEnd = opts.SendInitialEvents && opts.AllowBookmarks
	} else {
		if rv < c.historyFrom {
			// Before the cache's window (it started, or dropped events, after rv): etcd
			// still has the history unless it compacted it, and then answers 410 Expired.
			c.mu.Unlock()
			return c.innerWatch(ctx, key, opts)
		}
		w.startRev = rv
		// The history after rv, queued unbounded: it is bounded by the history itself.
		i := sort.Search(len(c.history), func(i int) bool { return c.history[i].rev > rv })
		for _, ev := range c.history[i:] {
			if w.keyMatches(ev.key) {
				w.lastRev = ev.rev
				if out, ok := w.convert(ev); ok {
					w.enqueue(out, false)
				}
			}
		}
	}
	w.lastRev = max(w.lastRev, w.startRev)
	w.nextBookmark = time.Now().Add(c.cfg.BookmarkInterval)
	c.watchers.add(w, c.cfg.Attrs != nil)
	c.mu.Unlock()
	go w.run(ctx)
	return w, nil
}

// innerWatch is etcd's watch, its objects prepared as the cache's own are.
func (c *Cacher) innerWatch(ctx context.Context, key string, opts ListOptions) (watch.Interface, error) {
	w, err := c.inner.Watch(ctx, key, opts)
	if err != nil || c.cfg.Prepare == nil {
		return w, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type != watch.Error && ev.Object != nil {
			c.cfg.Prepare(ev.Object)
		}
		return ev, true
	}), nil
}
