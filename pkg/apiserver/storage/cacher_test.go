package storage_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// newCacher starts a watch cache of configmaps over a fresh etcd and waits until it serves.
func newCacher(t *testing.T, mutate func(*storage.CacherConfig)) (*storage.Cacher, *storage.Etcd3) {
	t.Helper()
	c := etcdtest.Client(t)
	inner := storage.New(c, storage.Config{Prefix: "/registry", NewFunc: func() runtime.Object { return &corev1.ConfigMap{} }})
	cfg := storage.CacherConfig{KeyRoot: "configmaps", BookmarkInterval: 100 * time.Millisecond, Metrics: storage.NewCacherMetrics()}
	if mutate != nil {
		mutate(&cfg)
	}
	ch := storage.NewCacher(inner, cfg)
	ch.Start(context.Background())
	t.Cleanup(ch.Stop)
	waitFor(t, "the cache to serve", ch.Ready)
	return ch, inner
}

// waitFor polls cond until it holds, for 20 s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // poll
	}
}

func create(t *testing.T, s storage.Interface, name string, lbls map[string]string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Create(context.Background(), key(name), cm(name, lbls), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func update(t *testing.T, s storage.Interface, name, v string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(context.Background(), key(name), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.ConfigMap)
		c.Data = map[string]string{"k": v}
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(t *testing.T, l *corev1.ConfigMapList) []string {
	t.Helper()
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Name)
	}
	return out
}

func recv(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event in 20s")
	}
	return watch.Event{}
}

func rvOf(obj runtime.Object) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.ResourceVersion
	case *metav1.Status:
		return o.Message
	}
	return ""
}

func TestCacherLists(t *testing.T) {
	ch, inner := newCacher(t, nil)
	ctx := context.Background()
	for i := range 10 {
		create(t, ch, fmt.Sprintf("cm%02d", i), map[string]string{"even": strconv.FormatBool(i%2 == 0)})
	}
	last := update(t, ch, "cm03", "changed")

	t.Run("consistent list sees every write", func(t *testing.T) {
		l := &corev1.ConfigMapList{}
		if err := ch.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 10 || l.Items[3].Data["k"] != "changed" || l.ResourceVersion < last.ResourceVersion {
			t.Fatalf("list: %v at %s", names(t, l), l.ResourceVersion)
		}
	})
	t.Run("not older than a revision", func(t *testing.T) {
		l := &corev1.ConfigMapList{}
		if err := ch.GetList(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: last.ResourceVersion, ResourceVersionMatch: "NotOlderThan"}, l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 10 || l.Items[3].Data["k"] != "changed" {
			t.Fatalf("list: %v", names(t, l))
		}
	})
	t.Run("a future revision is 504 ResourceVersionTooLarge", func(t *testing.T) {
		err := ch.GetList(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "999999"}, &corev1.ConfigMapList{})
		if storage.Code(err) != storage.ErrCodeTooLargeRV {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("selectors", func(t *testing.T) {
		l := &corev1.ConfigMapList{}
		sel := labels.SelectorFromSet(labels.Set{"even": "true"})
		if err := ch.GetList(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: storage.Predicate{Label: sel}}, l); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(names(t, l)) != "[cm00 cm02 cm04 cm06 cm08]" {
			t.Fatalf("list: %v", names(t, l))
		}
	})
	t.Run("pages", func(t *testing.T) {
		var got []string
		opts := storage.ListOptions{Recursive: true, ResourceVersion: "0", Limit: 3}
		var rv string
		for page := 0; ; page++ {
			l := &corev1.ConfigMapList{}
			if err := ch.GetList(ctx, "configmaps", opts, l); err != nil {
				t.Fatal(err)
			}
			if rv == "" {
				rv = l.ResourceVersion
			} else if l.ResourceVersion != rv {
				t.Fatalf("page %d at %s, first at %s", page, l.ResourceVersion, rv)
			}
			got = append(got, names(t, l)...)
			if page == 0 {
				if l.RemainingItemCount == nil || *l.RemainingItemCount != 7 {
					t.Fatalf("remaining: %v", l.RemainingItemCount)
				}
				// A write between pages is not seen by the pages that follow.
				create(t, ch, "cm00a", nil)
			}
			if l.Continue == "" {
				break
			}
			opts = storage.ListOptions{Recursive: true, Limit: 3, Continue: l.Continue}
		}
		if fmt.Sprint(got) != "[cm00 cm01 cm02 cm03 cm04 cm05 cm06 cm07 cm08 cm09]" {
			t.Fatalf("pages: %v", got)
		}
		// The same token is read from etcd when the cache is not serving.
		l := &corev1.ConfigMapList{}
		if err := inner.GetList(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "0", Limit: 3}, l); err != nil {
			t.Fatal(err)
		}
		l2 := &corev1.ConfigMapList{}
		if err := ch.GetList(ctx, "configmaps", storage.ListOptions{Recursive: true, Limit: 3, Continue: l.Continue}, l2); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(names(t, l2)) != "[cm02 cm03 cm04]" {
			t.Fatalf("etcd token continued: %v", names(t, l2))
		}
	})
	t.Run("get", func(t *testing.T) {
		got := &corev1.ConfigMap{}
		if err := ch.Get(ctx, key("cm03"), storage.GetOptions{ResourceVersion: "0"}, got); err != nil || got.Data["k"] != "changed" {
			t.Fatalf("get: %v %v", got, err)
		}
		got.Data["k"] = "mine" // a copy: the cache's object stays
		again := &corev1.ConfigMap{}
		if err := ch.Get(ctx, key("cm03"), storage.GetOptions{ResourceVersion: last.ResourceVersion}, again); err != nil || again.Data["k"] != "changed" {
			t.Fatalf("get again: %v %v", again, err)
		}
		if err := ch.Get(ctx, key("nope"), storage.GetOptions{ResourceVersion: "0"}, got); !storage.IsNotFound(err) {
			t.Fatalf("missing: %v", err)
		}
	})
}

func TestCacherWatch(t *testing.T) {
	ch, inner := newCacher(t, func(c *storage.CacherConfig) { c.HistoryCapacity = 5 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := create(t, ch, "a", map[string]string{"x": "1"})
	create(t, ch, "b", nil)

	t.Run("from 0: the state, then changes", func(t *testing.T) {
		w, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for _, n := range []string{"a", "b"} {
			if ev := recv(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != n {
				t.Fatalf("initial: %v", ev)
			}
		}
		u := update(t, ch, "a", "2")
		if ev := recv(t, w); ev.Type != watch.Modified || rvOf(ev.Object) != u.ResourceVersion {
			t.Fatalf("modified: %v", ev)
		}
	})
	t.Run("from a revision, with a selector", func(t *testing.T) {
		sel := labels.SelectorFromSet(labels.Set{"x": "1"})
		w, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion, Predicate: storage.Predicate{Label: sel}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// From history: the update of a (b does not match).
		if ev := recv(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.ConfigMap).Name != "a" {
			t.Fatalf("history: %v", ev)
		}
		// Leaving the selection is DELETED.
		out := &corev1.ConfigMap{}
		err = ch.GuaranteedUpdate(context.Background(), key("a"), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			c := cur.(*corev1.ConfigMap)
			c.Labels = nil
			return c, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ev := recv(t, w); ev.Type != watch.Deleted || rvOf(ev.Object) != out.ResourceVersion {
			t.Fatalf("left selection: %v", ev)
		}
	})
	t.Run("initial events end with an annotated bookmark", func(t *testing.T) {
		w, err := ch.Watch(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, SendInitialEvents: true, AllowBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		recv(t, w)
		recv(t, w)
		ev := recv(t, w)
		if ev.Type != watch.Bookmark || ev.Object.(*corev1.ConfigMap).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("end of initial events: %v", ev)
		}
		// Then bookmarks at the latest revision; this one follows a write elsewhere.
		del := &corev1.ConfigMap{}
		if err := ch.Delete(context.Background(), key("b"), del, nil, nil); err != nil {
			t.Fatal(err)
		}
		if ev := recv(t, w); ev.Type != watch.Deleted || rvOf(ev.Object) != del.ResourceVersion {
			t.Fatalf("deleted: %v", ev)
		}
		ev = recv(t, w)
		if ev.Type != watch.Bookmark || rvOf(ev.Object) < del.ResourceVersion {
			t.Fatalf("bookmark: %v", ev)
		}
	})
	t.Run("older than the history: from etcd, then 410 Expired once compacted", func(t *testing.T) {
		var first string
		for i := range 6 {
			u := update(t, ch, "a", strconv.Itoa(10+i))
			if i == 0 {
				first = u.ResourceVersion
			}
		}
		w, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for ev := recv(t, w); rvOf(ev.Object) != first; ev = recv(t, w) {
		}
		if _, err := inner.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		w2, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		ev := recv(t, w2)
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("got %v", ev)
		}
	})
}

// A watcher that does not read is closed when its buffer overflows; the others and the
// cache go on, and the closing is counted.
func TestCacherSlowWatcher(t *testing.T) {
	m := storage.NewCacherMetrics()
	ch, _ := newCacher(t, func(c *storage.CacherConfig) { c.WatcherBuffer = 5; c.Metrics = m; c.Resource = "configmaps" })
	ctx := context.Background()
	start := create(t, ch, "a", nil)
	slow, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	var last string
	for i := range 100 {
		last = update(t, ch, "a", strconv.Itoa(i)).ResourceVersion
		if ev := recv(t, fast); rvOf(ev.Object) != last {
			t.Fatalf("fast watcher: %v, want %s", ev, last)
		}
	}
	// The slow one got a prefix of the events in order, then its channel closed.
	prev := start.ResourceVersion
	n := 0
	for ev := range slow.ResultChan() {
		rv := rvOf(ev.Object)
		if ev.Type != watch.Modified || len(rv) < len(prev) || (len(rv) == len(prev) && rv <= prev) {
			t.Fatalf("slow watcher: %v after %s", ev, prev)
		}
		prev = rv
		n++
	}
	if n >= 100 {
		t.Fatalf("slow watcher got all %d events", n)
	}
	if got := testutil.ToFloat64(m.Terminated.WithLabelValues("configmaps")); got != 1 {
		t.Fatalf("terminated watchers: %v", got)
	}
	// It watches again from where it was and gets the rest.
	again, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: prev})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	for {
		ev := recv(t, again)
		if rvOf(ev.Object) == last {
			break
		}
	}
}

// After a restart of the cache (or an etcd compaction, which the cache does not need),
// watchers are closed and watch again from where they were.
func TestCacherRestartAndCompaction(t *testing.T) {
	ch, inner := newCacher(t, nil)
	ctx := context.Background()
	a := create(t, ch, "a", nil)
	w, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	u := update(t, ch, "a", "1")
	if ev := recv(t, w); rvOf(ev.Object) != u.ResourceVersion {
		t.Fatalf("got %v", ev)
	}
	if _, err := inner.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	u2 := update(t, ch, "a", "2")
	if ev := recv(t, w); rvOf(ev.Object) != u2.ResourceVersion {
		t.Fatalf("after compaction: %v", ev)
	}
	ch.Restart()
	for range w.ResultChan() {
	}
	waitFor(t, "the cache to serve again", ch.Ready)
	w2, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: u2.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	u3 := update(t, ch, "a", "3")
	if ev := recv(t, w2); ev.Type != watch.Modified || rvOf(ev.Object) != u3.ResourceVersion {
		t.Fatalf("after restart: %v", ev)
	}
}

// Every watch event's object has been through Prepare, whether the cache serves the watch
// or hands it to etcd (a revision before the cache's history): the registry then needs no
// filter of its own.
func TestCacherWatchPrepares(t *testing.T) {
	prepared := func(obj runtime.Object) { obj.(*corev1.ConfigMap).Annotations = map[string]string{"prepared": "yes"} }
	ch, _ := newCacher(t, func(c *storage.CacherConfig) { c.HistoryCapacity = 2; c.Prepare = prepared })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := create(t, ch, "a", nil)
	var last *corev1.ConfigMap
	for i := range 4 {
		last = update(t, ch, "a", fmt.Sprint(i)) // past the history of 2: first is etcd's alone
	}
	waitFor(t, "the cache to see the last update", func() bool { return strconv.FormatInt(ch.ResourceVersion(), 10) == last.ResourceVersion })
	for name, rv := range map[string]string{"cache": "0", "etcd": first.ResourceVersion} {
		t.Run(name, func(t *testing.T) {
			w, err := ch.Watch(ctx, "configmaps", storage.ListOptions{Recursive: true, ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev := recv(t, w)
			if ev.Object.(*corev1.ConfigMap).Annotations["prepared"] != "yes" {
				t.Fatalf("%s event's object not prepared: %v", ev.Type, ev.Object)
			}
		})
	}
}

// A get of the latest state (resourceVersion unset) reads etcd and returns its object, a
// copy of the cache's when the cache holds that revision, else decoded: equal either way,
// at once after a write the cache may not have seen, and never the cache's own object.
func TestCacherGetLatest(t *testing.T) {
	ch, inner := newCacher(t, nil)
	ctx := context.Background()
	created := create(t, ch, "a", map[string]string{"x": "1"})
	waitFor(t, "the cache to hold the object", func() bool { return ch.ResourceVersion() >= mustRV(t, created.ResourceVersion) })
	for round := range 3 {
		want := &corev1.ConfigMap{}
		if err := inner.Get(ctx, key("a"), storage.GetOptions{}, want); err != nil {
			t.Fatal(err)
		}
		got := &corev1.ConfigMap{}
		if err := ch.Get(ctx, key("a"), storage.GetOptions{}, got); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("round %d: got %+v, want %+v", round, got, want)
		}
		got.Data = map[string]string{"mutated": "by the reader"} // must not reach the cache
		got.Labels["x"] = "mutated"
		again := &corev1.ConfigMap{}
		if err := ch.Get(ctx, key("a"), storage.GetOptions{ResourceVersion: "0"}, again); err != nil {
			t.Fatal(err)
		}
		if again.Labels["x"] == "mutated" || again.Data["mutated"] != "" {
			t.Fatal("a get handed out the cache's own object")
		}
		// Written through etcd: the next get has it whether or not the cache has seen it.
		up := update(t, inner, "a", fmt.Sprint(round))
		latest := &corev1.ConfigMap{}
		if err := ch.Get(ctx, key("a"), storage.GetOptions{}, latest); err != nil {
			t.Fatal(err)
		}
		if latest.ResourceVersion != up.ResourceVersion || latest.Data["k"] != fmt.Sprint(round) {
			t.Fatalf("round %d: get after an update read %s %v, want %s", round, latest.ResourceVersion, latest.Data, up.ResourceVersion)
		}
		waitFor(t, "the cache to see the update", func() bool { return ch.ResourceVersion() >= mustRV(t, up.ResourceVersion) })
	}
	if err := inner.Delete(ctx, key("a"), &corev1.ConfigMap{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	err := ch.Get(ctx, key("a"), storage.GetOptions{}, &corev1.ConfigMap{})
	if se, ok := err.(*storage.Error); !ok || se.Code != storage.ErrCodeNotFound {
		t.Fatalf("get after delete: %v", err)
	}
	if err := ch.Get(ctx, key("a"), storage.GetOptions{IgnoreNotFound: true}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("get after delete, ignoring not found: %v", err)
	}
}

func mustRV(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
