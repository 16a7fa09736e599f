package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The watch cache (Cacher) serves one resource's reads and watches from memory, as
// kube-apiserver's storage/cacher does: one etcd watch per resource feeds a sorted copy of
// every object (decoded once) and a window of recent events. Writes go to etcd. What the
// cache cannot serve (exact revisions, continue tokens of forgotten snapshots, anything
// while it is not synced) is read from etcd as before.

// Defaults of CacherConfig.
const (
	DefaultHistoryCapacity = 1000
	DefaultHistoryWindow   = 5 * time.Minute
	DefaultWatcherBuffer   = 1000
	// freshTimeout is how long a read waits for the cache to reach a revision (upstream's
	// blockTimeout): then 504 ResourceVersionTooLarge, or etcd for a consistent read.
	freshTimeout = 3 * time.Second
	// maxSnapshots bounds the snapshots kept for the continue tokens of paged lists.
	maxSnapshots = 32
)

// CacherConfig configures the watch cache of one resource.
type CacherConfig struct {
	// Resource names the resource in metrics and logs ("configmaps", "widgets.example.com").
	Resource string
	// KeyRoot is the storage key every object of the resource lives under ("configmaps").
	KeyRoot string
	// HistoryCapacity is how many events are kept for watches that start at an older
	// revision; HistoryWindow how long at most. A watch from before the oldest kept event
	// gets 410 Expired.
	HistoryCapacity int
	HistoryWindow   time.Duration
	// WatcherBuffer is how many events may wait for one slow watcher; one more closes that
	// watcher (its client watches again from where it was) and counts in the metrics.
	WatcherBuffer int
	// BookmarkInterval is how often watchers that allow bookmarks get one (default 1 min).
	BookmarkInterval time.Duration
	// Prepare, when set, is applied once to every object decoded, before it is shared
	// (the registry sets the kind there, so nobody writes to shared objects later).
	Prepare func(runtime.Object)
	// Attrs, when set, returns an object's labels and selectable fields exactly as every
	// Predicate.GetAttrs used on the resource does. The cache then computes them once per
	// object it decodes, matches lists and watchers with them, and keeps watchers whose
	// field selector requires an exact metadata.name or IndexFields value by that value, so
	// that an event meets only the watchers that can want it.
	Attrs func(runtime.Object) (labels.Set, fields.Set, error)
	// IndexFields are the fields, besides metadata.name, watchers are kept by (pods:
	// spec.nodeName, each kubelet's watch). Only with Attrs.
	IndexFields []string
	Metrics     *CacherMetrics
	Logger      *slog.Logger
}

// cacheItem is one object in the cache, by its full etcd key.
type cacheItem struct {
	key   string
	obj   runtime.Object // shared: never modified
	attrs *attrs         // obj's, nil when unknown
}

func lessItem(a, b *cacheItem) bool { return a.key < b.key }

type cacheTree = btree.BTreeG[*cacheItem]

func newTree() *cacheTree { return btree.NewG(32, lessItem) }

// cacheEvent is one change of one object as the cache saw it, unfiltered.
type cacheEvent struct {
	typ  watch.EventType // Added, Modified or Deleted
	key  string
	obj  runtime.Object // the new state; for Deleted the last state, at the deletion's revision
	prev runtime.Object // the state before, nil for Added
	rev  int64
	at   time.Time

	attrs, prevAttrs *attrs // obj's and prev's, nil when unknown
}

// snapshot is the cache's content at one revision, kept for paged lists' continue tokens.
type snapshot struct {
	tree    *cacheTree
	expires time.Time
}

// Cacher implements Interface over an Etcd3 store with a watch cache.
type Cacher struct {
	inner  *Etcd3
	cfg    CacherConfig
	prefix string // the full etcd key prefix of the resource, with a trailing "/"

	mu          sync.Mutex
	ready       bool
	restart     bool // Restart asked for a fresh sync
	generation  int  // how many times the cache was filled
	tree        *cacheTree
	rev         int64         // every event up to rev is in tree
	history     []*cacheEvent // oldest first
	historyFrom int64         // every event after historyFrom is in history
	revCh       chan struct{} // closed when rev or ready changes
	watchers    *watcherSet
	snapshots   map[int64]*snapshot
	current     *cacheTree // a clone of tree at rev, shared by reads until the next change

	progress chan struct{} // asks the feed for an etcd progress notification
	// floor is the highest revision a list read from etcd in place of the cache returned:
	// a resourceVersion=0 list never answers from an older state.
	floor atomic.Int64

	startOnce sync.Once
	started   atomic.Bool
	stopOnce  sync.Once
	cancel    context.CancelFunc
	done      chan struct{}
}

// NewCacher returns a watch cache over inner; it serves from memory once Start synced it.
func NewCacher(inner *Etcd3, cfg CacherConfig) *Cacher {
	if cfg.HistoryCapacity <= 0 {
		cfg.HistoryCapacity = DefaultHistoryCapacity
	}
	if cfg.HistoryWindow <= 0 {
		cfg.HistoryWindow = DefaultHistoryWindow
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = DefaultWatcherBuffer
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Resource == "" {
		cfg.Resource = cfg.KeyRoot
	}
	return &Cacher{
		inner: inner, cfg: cfg,
		prefix:    inner.fullKey(strings.Trim(cfg.KeyRoot, "/")) + "/",
		tree:      newTree(),
		revCh:     make(chan struct{}),
		watchers:  newWatcherSet(cfg.IndexFields),
		snapshots: map[int64]*snapshot{},
		progress:  make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
}

// Start fills the cache and keeps it in step with etcd until ctx ends or Stop.
func (c *Cacher) Start(ctx context.Context) {
	c.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(ctx)
		c.cancel = cancel
		c.started.Store(true)
		go c.run(ctx)
	})
}

// Stop ends the cache's etcd watch and closes its watchers; reads go to etcd from then on.
// It returns once the cache's goroutine has ended.
func (c *Cacher) Stop() {
	c.stopOnce.Do(func() {
		c.startOnce.Do(func() { close(c.done) }) // never started
		if c.cancel != nil {
			c.cancel()
		}
		<-c.done
	})
}

// Ready reports whether the cache is synced and serving.
func (c *Cacher) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// Inner is the etcd store under the cache.
func (c *Cacher) Inner() *Etcd3 { return c.inner }

// FullKey is key as stored in etcd, under the configured prefix.
func (c *Cacher) FullKey(key string) string { return c.inner.FullKey(key) }

// Len is the number of objects in the cache.
func (c *Cacher) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tree.Len()
}

// SetWatcherBuffer changes WatcherBuffer for watches started from now on; 0 closes a
// watcher at its first live event (tests make a watcher fall behind with it).
func (c *Cacher) SetWatcherBuffer(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.WatcherBuffer = n
}

// ResourceVersion is the revision the cache is at.
func (c *Cacher) ResourceVersion() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// Restart drops the cache's state and watchers and fills it again from etcd, as after a
// broken etcd watch (tests use it; clients watch again). It returns once the cache serves
// again, or has stopped.
func (c *Cacher) Restart() {
	if !c.started.Load() {
		return
	}
	c.mu.Lock()
	c.restart = true
	gen := c.generation
	c.mu.Unlock()
	c.requestProgress()
	for {
		c.mu.Lock()
		again, ch := c.generation > gen && c.ready, c.revCh
		c.mu.Unlock()
		if again {
			return
		}
		select {
		case <-ch:
		case <-c.done:
			return
		}
	}
}

func (c *Cacher) run(ctx context.Context) {
	defer close(c.done)
	defer c.unready()
	backoff := 100 * time.Millisecond
	for {
		synced, err := c.sync(ctx)
		c.unready()
		if ctx.Err() != nil {
			return
		}
		if synced {
			backoff = 100 * time.Millisecond
		}
		if err != nil {
			c.cfg.Logger.Warn("watch cache: etcd watch ended, reading the resource again", "resource", c.cfg.Resource, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// unready closes every watcher and sends reads to etcd until the next sync.
func (c *Cacher) unready() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready {
		c.ready = false
		c.broadcast()
	}
	for w := range c.watchers.all {
		w.terminate()
	}
	c.watchers = newWatcherSet(c.cfg.IndexFields)
	c.history = nil
	c.current = nil
	c.snapshots = map[int64]*snapshot{}
}

// broadcast wakes every reader waiting for the revision; c.mu is held.
func (c *Cacher) broadcast() {
	close(c.revCh)
	c.revCh = make(chan struct{})
}

// sync lists the resource from etcd and follows its watch until it fails; synced says
// whether it got as far as serving.
func (c *Cacher) sync(ctx context.Context) (synced bool, err error) {
	// A watch stream of its own, so that progress requests are answered for this watch
	// alone (etcd answers them once every watch on the stream is up to date).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wctx = metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(wctx), "hacp-watch-cache", fmt.Sprintf("%s/%p", c.cfg.Resource, c))
	resp, err := c.inner.client.Get(wctx, c.prefix, clientv3.WithPrefix())
	if err != nil {
		return false, wrapEtcdErr(c.prefix, err)
	}
	tree := newTree()
	for _, kv := range resp.Kvs {
		obj, err := c.decode(ctx, kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return false, fmt.Errorf("decode %s: %w", kv.Key, err)
		}
		tree.ReplaceOrInsert(&cacheItem{key: string(kv.Key), obj: obj, attrs: c.attrsOf(obj)})
	}
	rev := resp.Header.Revision
	c.mu.Lock()
	c.tree, c.rev, c.historyFrom, c.history, c.current = tree, rev, rev, nil, nil
	c.ready, c.restart = true, false
	c.generation++
	c.broadcast()
	c.mu.Unlock()
	c.cfg.Metrics.objects(c.cfg.Resource, tree.Len())

	wch := c.inner.client.Watch(wctx, c.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
	tick := min(c.cfg.BookmarkInterval/2, time.Second)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-c.progress:
			c.mu.Lock()
			restart := c.restart
			c.mu.Unlock()
			if restart {
				return true, nil
			}
			_ = c.inner.client.RequestProgress(wctx)
		case now := <-ticker.C:
			if c.tick(now) {
				_ = c.inner.client.RequestProgress(wctx)
			}
		case wr, ok := <-wch:
			if !ok {
				return true, errors.New("etcd watch closed")
			}
			if wr.CompactRevision != 0 {
				return true, fmt.Errorf("etcd history compacted at %d", wr.CompactRevision)
			}
			if err := wr.Err(); err != nil {
				return true, err
			}
			if wr.IsProgressNotify() {
				c.advance(wr.Header.Revision)
				continue
			}
			if err := c.apply(wr.Events); err != nil {
				return true, err
			}
		}
	}
}

// decode decodes one value as stored at the full key k, for sharing.
func (c *Cacher) decode(ctx context.Context, k, data []byte, rev int64) (runtime.Object, error) {
	obj := c.inner.cfg.NewFunc()
	if err := c.inner.decodeKV(ctx, k, data, rev, obj); err != nil {
		return nil, err
	}
	if c.cfg.Prepare != nil {
		c.cfg.Prepare(obj)
	}
	return obj, nil
}

// advance moves the cache to rev, a revision etcd reported progress to.
func (c *Cacher) advance(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev > c.rev {
		c.rev = rev
		c.current = nil
		c.broadcast()
	}
}

// apply applies one etcd watch response's events: objects are decoded first, then the
// tree, the history and the watchers change together.
func (c *Cacher) apply(evs []*clientv3.Event) error {
	type decoded struct {
		ev    *clientv3.Event
		obj   runtime.Object
		attrs *attrs
	}
	ds := make([]decoded, len(evs))
	for i, ev := range evs {
		ds[i].ev = ev
		if ev.Type == clientv3.EventTypePut {
			obj, err := c.decode(context.Background(), ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision)
			if err != nil {
				return fmt.Errorf("decode %s: %w", ev.Kv.Key, err)
			}
			ds[i].obj, ds[i].attrs = obj, c.attrsOf(obj)
		}
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range ds {
		key, rev := string(d.ev.Kv.Key), d.ev.Kv.ModRevision
		var prev runtime.Object
		var prevAttrs *attrs
		if old, ok := c.tree.Get(&cacheItem{key: key}); ok {
			prev, prevAttrs = old.obj, old.attrs
		}
		ce := &cacheEvent{key: key, rev: rev, at: now, prev: prev, prevAttrs: prevAttrs, attrs: d.attrs}
		switch {
		case d.ev.Type == clientv3.EventTypeDelete:
			if prev == nil {
				continue // never seen: nothing to tell
			}
			c.tree.Delete(&cacheItem{key: key})
			// A deleted object carries the revision of its deletion, as from etcd.
			gone := prev.DeepCopyObject()
			_ = setRV(gone, rev)
			ce.typ, ce.obj, ce.attrs = watch.Deleted, gone, prevAttrs // only the resourceVersion differs
		case prev == nil:
			c.tree.ReplaceOrInsert(&cacheItem{key: key, obj: d.obj, attrs: d.attrs})
			ce.typ, ce.obj = watch.Added, d.obj
		default:
			c.tree.ReplaceOrInsert(&cacheItem{key: key, obj: d.obj, attrs: d.attrs})
			ce.typ, ce.obj = watch.Modified, d.obj
		}
		c.record(ce)
		c.fanOut(ce)
		if rev > c.rev {
			c.rev = rev
		}
	}
	c.current = nil
	c.broadcast()
	c.cfg.Metrics.objects(c.cfg.Resource, c.tree.Len())
	c.cfg.Metrics.received(c.cfg.Resource, len(ds))
	return nil
}

// record adds ev to the history, dropping the oldest events over capacity; c.mu is held.
func (c *Cacher) record(ev *cacheEvent) {
	c.history = append(c.history, ev)
	if n := len(c.history) - c.cfg.HistoryCapacity; n > 0 {
		c.dropHistory(n)
	}
}

// dropHistory forgets the n oldest events; c.mu is held.
func (c *Cacher) dropHistory(n int) {
	c.historyFrom = c.history[n-1].rev
	clear(c.history[:n])
	c.history = c.history[n:]
	if cap(c.history) > 4*c.cfg.HistoryCapacity && len(c.history) < c.cfg.HistoryCapacity {
		c.history = append([]*cacheEvent(nil), c.history...) // let the old array go
	}
}

// tick drops events older than the window and expired snapshots, and queues the bookmarks
// that are due; it reports whether any were, so the feed asks etcd for fresh progress.
func (c *Cacher) tick(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(c.history) && now.Sub(c.history[n].at) > c.cfg.HistoryWindow {
		n++
	}
	if n > 0 {
		c.dropHistory(n)
	}
	for rev, s := range c.snapshots {
		if now.After(s.expires) {
			delete(c.snapshots, rev)
		}
	}
	due := false
	var over []*cacheWatcher
	for w := range c.watchers.all {
		if w.bookmarks && !now.Before(w.nextBookmark) {
			due = true
			w.nextBookmark = now.Add(c.cfg.BookmarkInterval)
			if !w.offerBookmark(c.rev) {
				over = append(over, w)
			}
		}
	}
	c.dropWatchers(over)
	return due
}

// fanOut offers ev to the watchers it may concern; c.mu is held.
func (c *Cacher) fanOut(ev *cacheEvent) {
	var over []*cacheWatcher
	c.watchers.offer(ev, func(w *cacheWatcher) {
		if !w.offer(ev) {
			over = append(over, w)
		}
	})
	c.dropWatchers(over)
}

// dropWatchers forgets watchers closed because they fell behind; c.mu is held.
func (c *Cacher) dropWatchers(over []*cacheWatcher) {
	for _, w := range over {
		c.watchers.remove(w)
		c.cfg.Metrics.terminated(c.cfg.Resource)
	}
}

// requestProgress asks the feed for an etcd progress notification.
func (c *Cacher) requestProgress() {
	select {
	case c.progress <- struct{}{}:
	default:
	}
}

var errNotReady = errors.New("watch cache not ready")

// waitFresh waits until the cache has seen rev, for freshTimeout at most (then
// ErrCodeTooLargeRV). It fails with errNotReady when the cache is not serving.
func (c *Cacher) waitFresh(ctx context.Context, rev int64) error {
	var timer *time.Timer
	var retry <-chan time.Time
	for {
		c.mu.Lock()
		ready, cur, ch := c.ready, c.rev, c.revCh
		c.mu.Unlock()
		if !ready {
			return errNotReady
		}
		if cur >= rev {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(freshTimeout)
			defer timer.Stop()
			t := time.NewTicker(100 * time.Millisecond) // a progress request may go unanswered
			defer t.Stop()
			retry = t.C
			c.requestProgress()
		}
		select {
		case <-ch:
		case <-retry:
			c.requestProgress()
		case <-timer.C:
			return &Error{Code: ErrCodeTooLargeRV, RV: rev, Msg: fmt.Sprintf("Too large resource version: %d, current: %d", rev, cur)}
		case <-ctx.Done():
			return wrapEtcdErr("", ctx.Err())
		}
	}
}

// view returns the cache's content now (shared, read-only) and its revision, or nil when
// the cache is not serving.
func (c *Cacher) view() (*cacheTree, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return nil, 0
	}
	if c.current == nil {
		c.current = c.tree.Clone()
	}
	return c.current, c.rev
}

// inRange reports whether key (as the registry gives it) belongs to this cache.
func (c *Cacher) inRange(key string) bool {
	return strings.HasPrefix(c.inner.fullKey(key)+"/", c.prefix)
}

func (c *Cacher) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	return c.inner.Create(ctx, key, obj, out)
}

func (c *Cacher) GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool, precond *Preconditions, tryUpdate UpdateFunc) error {
	return c.inner.GuaranteedUpdate(ctx, key, out, ignoreNotFound, precond, tryUpdate)
}

func (c *Cacher) Delete(ctx context.Context, key string, out runtime.Object, precond *Preconditions, validate ValidateFunc) error {
	return c.inner.Delete(ctx, key, out, precond, validate)
}

func (c *Cacher) Revision(ctx context.Context) (int64, error) { return c.inner.Revision(ctx) }

// Get serves resourceVersion "0" (any) and N (not older than N) from the cache; "" (the
// latest) is a quorum read from etcd, as upstream, whose object is not decoded again when
// the cache holds that very revision of it.
func (c *Cacher) Get(ctx context.Context, key string, opts GetOptions, out runtime.Object) error {
	if !c.inRange(key) {
		return c.inner.Get(ctx, key, opts, out)
	}
	if opts.ResourceVersion == "" {
		return c.getLatest(ctx, key, opts, out)
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	if err := c.waitFresh(ctx, rv); errors.Is(err, errNotReady) {
		return c.inner.Get(ctx, key, opts, out)
	} else if err != nil {
		return err
	}
	tree, _ := c.view()
	if tree == nil {
		return c.inner.Get(ctx, key, opts, out)
	}
	it, ok := tree.Get(&cacheItem{key: c.inner.fullKey(key)})
	if !ok {
		if opts.IgnoreNotFound {
			resetObject(out)
			return nil
		}
		return &Error{Code: ErrCodeNotFound, Key: key}
	}
	ov, cv := reflect.ValueOf(out), reflect.ValueOf(it.obj)
	if ov.Type() != cv.Type() || ov.Kind() != reflect.Pointer {
		return c.inner.Get(ctx, key, opts, out)
	}
	ov.Elem().Set(reflect.ValueOf(it.obj.DeepCopyObject()).Elem())
	return nil
}

// getLatest is a quorum read of key from etcd; the object is a copy of the cache's when the
// cache holds the revision etcd returned (the same bytes decoded the same way), else
// decoded as the etcd store does.
func (c *Cacher) getLatest(ctx context.Context, key string, opts GetOptions, out runtime.Object) error {
	full := c.inner.fullKey(key)
	resp, err := c.inner.kv.Get(ctx, full)
	if err != nil {
		return wrapEtcdErr(key, err)
	}
	c.inner.saw(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		if opts.IgnoreNotFound {
			resetObject(out)
			return nil
		}
		return &Error{Code: ErrCodeNotFound, Key: key}
	}
	kv := resp.Kvs[0]
	c.mu.Lock()
	var cached runtime.Object
	if c.ready {
		if it, ok := c.tree.Get(&cacheItem{key: full}); ok {
			cached = it.obj
		}
	}
	c.mu.Unlock()
	if cached != nil {
		ov, cv := reflect.ValueOf(out), reflect.ValueOf(cached)
		if a, err := meta.Accessor(cached); err == nil && a.GetResourceVersion() == strconv.FormatInt(kv.ModRevision, 10) &&
			ov.Type() == cv.Type() && ov.Kind() == reflect.Pointer {
			ov.Elem().Set(reflect.ValueOf(cached.DeepCopyObject()).Elem())
			return nil
		}
	}
	return asCallerKey(c.inner.decodeKV(ctx, kv.Key, kv.Value, kv.ModRevision, out), key)
}

// GetList serves lists from the cache: resourceVersion "0" at once, N once the cache has
// seen N, "" (consistent) once the cache has seen etcd's current revision; pages continue
// from a snapshot of the first page's revision. Exact revisions are read from etcd.
func (c *Cacher) GetList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) error {
	return c.getList(ctx, key, opts, listObj, nil)
}

var _ CachedReader = (*Cacher)(nil)

// GetListItems is CachedReader's: the endpoints encode the items from their cached
// encodings.
func (c *Cacher) GetListItems(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) (items []runtime.Object, shared bool, err error) {
	var out sharedItems
	if err := c.getList(ctx, key, opts, listObj, &out); err != nil {
		return nil, false, err
	}
	if out.set {
		return out.items, true, nil
	}
	items, err = meta.ExtractList(listObj)
	return items, false, err
}

// sharedItems receives a page's items from the cache instead of its list object.
type sharedItems struct {
	items []runtime.Object
	set   bool
}

func (c *Cacher) getList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object, out *sharedItems) error {
	if !opts.Recursive || !c.inRange(key) {
		return c.inner.GetList(ctx, key, opts, listObj)
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	keyPrefix := c.inner.fullKey(key)
	if !strings.HasSuffix(keyPrefix, "/") {
		keyPrefix += "/"
	}
	fromEtcd := func() error {
		if err := c.inner.GetList(ctx, key, opts, listObj); err != nil {
			return err
		}
		if l, err := meta.ListAccessor(listObj); err == nil {
			if r, err := strconv.ParseInt(l.GetResourceVersion(), 10, 64); err == nil {
				for f := c.floor.Load(); r > f && !c.floor.CompareAndSwap(f, r); f = c.floor.Load() {
				}
			}
		}
		return nil
	}
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return &Error{Code: ErrCodeInvalidRV, Msg: "specifying resource version is not allowed when using continue"}
		}
		fromKey, rev, err := decodeContinue(opts.Continue, keyPrefix)
		if err != nil {
			return err
		}
		c.mu.Lock()
		s := c.snapshots[rev]
		if s != nil {
			s.expires = time.Now().Add(c.cfg.HistoryWindow)
		}
		c.mu.Unlock()
		if s == nil || c.compacted(ctx, rev) {
			return c.inner.GetList(ctx, key, opts, listObj)
		}
		return c.page(s.tree, rev, keyPrefix, fromKey, opts, listObj, out)
	case opts.ResourceVersionMatch == "Exact",
		opts.ResourceVersionMatch == "" && opts.Limit > 0 && rv > 0:
		return c.inner.GetList(ctx, key, opts, listObj)
	case opts.ResourceVersion == "":
		// A consistent read: etcd's revision now, then the cache once it has seen it.
		cur, err := c.inner.Revision(ctx)
		if err != nil {
			return err
		}
		if err := c.waitFresh(ctx, cur); err != nil {
			if ctx.Err() != nil {
				return err
			}
			return fromEtcd()
		}
	case rv == 0:
		if f := c.floor.Load(); f > 0 {
			if err := c.waitFresh(ctx, f); err != nil {
				if ctx.Err() != nil {
					return err
				}
				return fromEtcd()
			}
		}
	default:
		if err := c.waitFresh(ctx, rv); errors.Is(err, errNotReady) {
			return fromEtcd()
		} else if err != nil {
			return err
		}
	}
	tree, rev := c.view()
	if tree == nil {
		return fromEtcd()
	}
	if err := c.page(tree, rev, keyPrefix, keyPrefix, opts, listObj, out); err != nil {
		return err
	}
	if l, err := meta.ListAccessor(listObj); err == nil && l.GetContinue() != "" {
		c.mu.Lock()
		if c.snapshots[rev] == nil {
			if len(c.snapshots) >= maxSnapshots {
				c.dropOldestSnapshot()
			}
			c.snapshots[rev] = &snapshot{tree: tree}
		}
		c.snapshots[rev].expires = time.Now().Add(c.cfg.HistoryWindow)
		c.mu.Unlock()
	}
	return nil
}

// compacted reports whether etcd may have compacted rev away (a token of a compacted
// revision is expired, as when etcd serves it): one small read at rev.
func (c *Cacher) compacted(ctx context.Context, rev int64) bool {
	_, err := c.inner.kv.Get(ctx, c.prefix, clientv3.WithRev(rev), clientv3.WithCountOnly(), clientv3.WithLimit(1))
	return err != nil
}

// dropOldestSnapshot forgets the snapshot that expires first; c.mu is held.
func (c *Cacher) dropOldestSnapshot() {
	var oldest int64 = -1
	for rev, s := range c.snapshots {
		if oldest < 0 || s.expires.Before(c.snapshots[oldest].expires) {
			oldest = rev
		}
	}
	delete(c.snapshots, oldest)
}

// page fills listObj with the items of tree under keyPrefix from fromKey on that match
// opts, up to opts.Limit, with a continue token at rev when there are more; with out, the
// items go there instead (shared), and listObj gets the rest.
func (c *Cacher) page(tree *cacheTree, rev int64, keyPrefix, fromKey string, opts ListOptions, listObj runtime.Object, out *sharedItems) error {
	list, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	end := &cacheItem{key: prefixEnd(keyPrefix)}
	var items []runtime.Object
	var next string
	var more bool
	var matchErr error
	iter := func(it *cacheItem) bool {
		if opts.Limit > 0 && int64(len(items)) >= opts.Limit {
			more, next = true, it.key
			return false
		}
		ok := true
		if it.attrs != nil {
			ok = match(opts.Predicate, it.obj, it.attrs)
		} else if ok, matchErr = opts.Predicate.Matches(it.obj); matchErr != nil {
			return false
		}
		if ok {
			items = append(items, it.obj)
		}
		return true
	}
	if end.key == "" {
		tree.AscendGreaterOrEqual(&cacheItem{key: fromKey}, iter)
	} else {
		tree.AscendRange(&cacheItem{key: fromKey}, end, iter)
	}
	if matchErr != nil {
		return matchErr
	}
	if items == nil {
		items = []runtime.Object{}
	}
	if out != nil {
		out.items, out.set = items, true
	} else if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	list.SetResourceVersion(strconv.FormatInt(rev, 10))
	list.SetContinue("")
	list.SetRemainingItemCount(nil)
	if more {
		token, err := encodeContinue(next, keyPrefix, rev)
		if err != nil {
			return err
		}
		list.SetContinue(token)
		if opts.Predicate.Empty() {
			var n int64
			count := func(*cacheItem) bool { n++; return true }
			if end.key == "" {
				tree.AscendGreaterOrEqual(&cacheItem{key: next}, count)
			} else {
				tree.AscendRange(&cacheItem{key: next}, end, count)
			}
			list.SetRemainingItemCount(&n)
		}
	}
	return nil
}

// prefixEnd is the first key after every key that starts with prefix ("" for none).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// DeleteCorrupt is CorruptDeleter's: the deletion goes to etcd.
func (c *Cacher) DeleteCorrupt(ctx context.Context, key string, dryRun bool) error {
	return c.inner.DeleteCorrupt(ctx, key, dryRun)
}
