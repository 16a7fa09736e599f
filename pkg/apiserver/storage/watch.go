package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// etcdWatcher turns an etcd watch into watch.Events of decoded objects.
type etcdWatcher struct {
	s        *Etcd3
	cancel   context.CancelFunc
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *etcdWatcher) Stop() {
	w.stopOnce.Do(func() {
		w.cancel()
	})
}

func (w *etcdWatcher) ResultChan() <-chan watch.Event { return w.result }

// Watch starts a watch. With ResourceVersion "" or "0" (or SendInitialEvents)
// the current state is sent first as ADDED events; otherwise events after the
// given revision follow. A compacted revision yields one ERROR event (410 Expired).
func (s *Etcd3) Watch(ctx context.Context, key string, opts ListOptions) (watch.Interface, error) {
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	k := s.fullKey(key)
	if opts.Recursive && !strings.HasSuffix(k, "/") {
		k += "/"
	}
	wctx, cancel := context.WithCancel(ctx)
	// A distinct stream per watcher keeps RequestProgress scoped to it.
	wctx = clientv3.WithRequireLeader(wctx)
	w := &etcdWatcher{s: s, cancel: cancel, result: make(chan watch.Event, 100), done: make(chan struct{})}
	initial := rv == 0 || opts.SendInitialEvents
	go w.run(wctx, k, rv, initial, opts)
	return w, nil
}

func (w *etcdWatcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *etcdWatcher) sendError(ctx context.Context, code int32, reason metav1.StatusReason, msg string) {
	w.sendStatus(ctx, metav1.Status{Status: metav1.StatusFailure, Message: msg, Reason: reason, Code: code})
}

// sendStatus sends st as the watch's ERROR event.
func (w *etcdWatcher) sendStatus(ctx context.Context, st metav1.Status) {
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.send(ctx, watch.Event{Type: watch.Error, Object: &st})
}

// run sends the initial events when asked, then the events of an etcd watch from the
// revision after rv, and bookmarks when they are allowed, until ctx ends or the watch fails.
func (w *etcdWatcher) run(ctx context.Context, key string, rv int64, initial bool, opts ListOptions) {
	defer close(w.result)
	defer w.cancel()
	s := w.s
	if initial {
		var ok bool
		if rv, ok = w.sendInitial(ctx, key, rv, opts); !ok {
			return
		}
	}

	wopts := []clientv3.OpOption{clientv3.WithRev(rv + 1), clientv3.WithPrevKV(), clientv3.WithProgressNotify()}
	if opts.Recursive {
		wopts = append(wopts, clientv3.WithPrefix())
	}
	wch := s.client.Watch(ctx, key, wopts...)
	var ticker <-chan time.Time
	if opts.AllowBookmarks {
		t := time.NewTicker(s.cfg.BookmarkInterval)
		defer t.Stop()
		ticker = t.C
	}
	lastRV := rv
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker:
			// Ask etcd where this stream is; the answer arrives as a progress notification.
			_ = s.client.RequestProgress(ctx)
		case resp, ok := <-wch:
			if !ok || !w.handle(ctx, resp, rv, &lastRV, opts) {
				return
			}
		}
	}
}

// sendInitial sends the objects under key at revision rv (0: the current one) as ADDED
// events, and the bookmark that ends them when asked; it returns the revision read and
// false when the watch ends.
func (w *etcdWatcher) sendInitial(ctx context.Context, key string, rv int64, opts ListOptions) (int64, bool) {
	s := w.s
	var getOps []clientv3.OpOption
	if opts.Recursive {
		getOps = append(getOps, clientv3.WithPrefix())
	}
	if rv > 0 {
		getOps = append(getOps, clientv3.WithRev(rv))
	}
	resp, err := s.client.Get(ctx, key, getOps...)
	if err != nil {
		if ctx.Err() == nil {
			err = wrapEtcdErr(key, err)
			if IsExpired(err) {
				w.sendError(ctx, http.StatusGone, metav1.StatusReasonExpired, fmt.Sprintf("too old resource version: %d", rv))
			} else {
				w.sendError(ctx, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
			}
		}
		return 0, false
	}
	for _, kv := range resp.Kvs {
		obj := s.cfg.NewFunc()
		if err := s.decodeKV(ctx, kv.Key, kv.Value, kv.ModRevision, obj); err != nil {
			w.sendError(ctx, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
			return 0, false
		}
		if ok, _ := opts.Predicate.Matches(obj); ok {
			if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
				return 0, false
			}
		}
	}
	rv = resp.Header.Revision
	if opts.SendInitialEvents && opts.AllowBookmarks {
		// Upstream marks the end of the initial events with an annotated bookmark.
		if !w.send(ctx, w.bookmark(rv, true)) {
			return 0, false
		}
	}
	return rv, true
}

// handle sends the events of one etcd watch response (watched from after rv), or a
// bookmark for a progress notification past lastRV, the last revision seen; false when
// the watch ends.
func (w *etcdWatcher) handle(ctx context.Context, resp clientv3.WatchResponse, rv int64, lastRV *int64, opts ListOptions) bool {
	if resp.CompactRevision != 0 {
		w.sendError(ctx, http.StatusGone, metav1.StatusReasonExpired,
			fmt.Sprintf("too old resource version: %d (%d)", rv, resp.CompactRevision))
		return false
	}
	if err := resp.Err(); err != nil {
		if ctx.Err() == nil {
			w.sendError(ctx, http.StatusInternalServerError, metav1.StatusReasonInternalError, "etcd watch: "+err.Error())
		}
		return false
	}
	if resp.IsProgressNotify() {
		if opts.AllowBookmarks && resp.Header.Revision > *lastRV {
			*lastRV = resp.Header.Revision
			if !w.send(ctx, w.bookmark(*lastRV, false)) {
				return false
			}
		}
		return true
	}
	for _, ev := range resp.Events {
		out, ok, err := w.convert(ctx, ev, opts.Predicate)
		if err != nil {
			// As upstream's etcd3 watcher: an event that cannot be decoded ends the
			// watch with an error, rather than leaving the client silently behind.
			w.sendStatus(ctx, watchReadError(err, ev.Type == clientv3.EventTypeDelete))
			return false
		}
		if ev.Kv.ModRevision > *lastRV {
			*lastRV = ev.Kv.ModRevision
		}
		if !ok {
			continue
		}
		if !w.send(ctx, out) {
			return false
		}
	}
	return true
}

func (w *etcdWatcher) bookmark(rev int64, initialEventsEnd bool) watch.Event {
	obj := w.s.cfg.NewFunc()
	_ = setRV(obj, rev)
	if initialEventsEnd {
		if a, err := metaAccessor(obj); err == nil {
			a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

// convert maps one etcd event onto a watch event, applying the predicate the
// upstream way: leaving the selection is DELETED, entering it is ADDED. ok is false for
// an event outside the selection; err reports a value that cannot be decrypted or decoded.
func (w *etcdWatcher) convert(ctx context.Context, ev *clientv3.Event, p Predicate) (out watch.Event, ok bool, err error) {
	s := w.s
	var cur, prev runtime.Object
	if ev.Type == clientv3.EventTypePut {
		cur = s.cfg.NewFunc()
		if err := s.decodeKV(ctx, ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision, cur); err != nil {
			return watch.Event{}, false, err
		}
	}
	if ev.PrevKv != nil {
		prev = s.cfg.NewFunc()
		// A deleted object carries the revision of its deletion.
		if err := s.decodeKV(ctx, ev.PrevKv.Key, ev.PrevKv.Value, ev.Kv.ModRevision, prev); err != nil {
			if ev.Type == clientv3.EventTypePut && p.Empty() {
				// As upstream: without a selection the previous state is not needed.
				return watch.Event{Type: watch.Modified, Object: cur}, true, nil
			}
			return watch.Event{}, false, err
		}
	}
	curOK := cur != nil && matches(p, cur)
	prevOK := prev != nil && matches(p, prev)
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if prev == nil || !prevOK {
			return watch.Event{}, false, nil
		}
		return watch.Event{Type: watch.Deleted, Object: prev}, true, nil
	case ev.IsCreate() || prev == nil:
		if !curOK {
			return watch.Event{}, false, nil
		}
		return watch.Event{Type: watch.Added, Object: cur}, true, nil
	case curOK && prevOK:
		return watch.Event{Type: watch.Modified, Object: cur}, true, nil
	case curOK && !prevOK:
		return watch.Event{Type: watch.Added, Object: cur}, true, nil
	case !curOK && prevOK:
		// Report the deletion with the new state, as upstream does.
		return watch.Event{Type: watch.Deleted, Object: cur}, true, nil
	}
	return watch.Event{}, false, nil
}

func matches(p Predicate, obj runtime.Object) bool {
	ok, err := p.Matches(obj)
	return err == nil && ok
}

// Compact compacts etcd history up to the current revision. Tests and tools only.
func (s *Etcd3) Compact(ctx context.Context) (int64, error) {
	rev, err := s.Revision(ctx)
	if err != nil {
		return 0, err
	}
	_, err = s.client.Compact(ctx, rev, clientv3.WithCompactPhysical())
	return rev, wrapEtcdErr("", err)
}

// FormatRV formats a revision as a resourceVersion.
func FormatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

// watchReadError is the status that ends a watch at an event whose object cannot be read
// back, as upstream's etcd3 watcher: a corrupt object's deletion is a 500 StorageReadError,
// any other a 500 InternalError; both carry the reason without the key.
func watchReadError(err error, deleted bool) metav1.Status {
	se := withCode(err, ErrCodeCorruptObj)
	if se == nil {
		return apierrors.NewInternalError(err).Status()
	}
	if deleted {
		return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonStoreReadError,
			Message: "saw a DELETED event, but object data is corrupt - " + se.Msg}
	}
	return apierrors.NewInternalError(errors.New(se.Msg)).Status()
}
