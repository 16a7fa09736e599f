package storage_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func newStore(t *testing.T) (*storage.Etcd3, *clientv3.Client) {
	t.Helper()
	c := etcdtest.Client(t)
	s := storage.New(c, storage.Config{
		Prefix:           "/registry",
		NewFunc:          func() runtime.Object { return &corev1.ConfigMap{} },
		BookmarkInterval: 100 * time.Millisecond,
	})
	return s, c
}

func cm(name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls}, Data: map[string]string{"k": "v"}}
}

func key(name string) string { return "configmaps/ns/" + name }

func TestCreateGetUpdateDelete(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	out := &corev1.ConfigMap{}
	if err := s.Create(ctx, key("a"), cm("a", nil), out); err != nil {
		t.Fatal(err)
	}
	if out.ResourceVersion == "" {
		t.Fatal("create: no resourceVersion")
	}
	raw, err := c.Get(ctx, "/registry/configmaps/ns/a")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("key layout: %v %v", raw, err)
	}
	if fmt.Sprint(raw.Kvs[0].ModRevision) != out.ResourceVersion {
		t.Fatalf("rv %s != mod revision %d", out.ResourceVersion, raw.Kvs[0].ModRevision)
	}
	if err := s.Create(ctx, key("a"), cm("a", nil), nil); !storage.IsExists(err) {
		t.Fatalf("duplicate create: %v", err)
	}
	withRV := cm("b", nil)
	withRV.ResourceVersion = "5"
	if err := s.Create(ctx, key("b"), withRV, nil); storage.Code(err) != storage.ErrCodeInvalidObj {
		t.Fatalf("create with rv: %v", err)
	}

	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, key("a"), storage.GetOptions{}, got); err != nil || got.Data["k"] != "v" || got.ResourceVersion != out.ResourceVersion {
		t.Fatalf("get: %+v %v", got, err)
	}
	if err := s.Get(ctx, key("missing"), storage.GetOptions{}, got); !storage.IsNotFound(err) {
		t.Fatalf("get missing: %v", err)
	}
	if err := s.Get(ctx, key("a"), storage.GetOptions{ResourceVersion: "999999"}, got); storage.Code(err) != storage.ErrCodeTooLargeRV {
		t.Fatalf("get future rv: %v", err)
	}

	// Update with the right rv precondition, then a stale one.
	rv := out.ResourceVersion
	upd := &corev1.ConfigMap{}
	err = s.GuaranteedUpdate(ctx, key("a"), upd, false, &storage.Preconditions{ResourceVersion: &rv}, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.ConfigMap)
		c.Data["k"] = "v2"
		return c, nil
	})
	if err != nil || upd.Data["k"] != "v2" || upd.ResourceVersion == rv {
		t.Fatalf("update: %+v %v", upd, err)
	}
	err = s.GuaranteedUpdate(ctx, key("a"), upd, false, &storage.Preconditions{ResourceVersion: &rv}, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	if !storage.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	// A no-op update does not write.
	before := upd.ResourceVersion
	if err := s.GuaranteedUpdate(ctx, key("a"), upd, false, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }); err != nil || upd.ResourceVersion != before {
		t.Fatalf("no-op update changed rv %s -> %s (%v)", before, upd.ResourceVersion, err)
	}
	if err := s.GuaranteedUpdate(ctx, key("nope"), upd, false, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }); !storage.IsNotFound(err) {
		t.Fatalf("update missing: %v", err)
	}

	// Concurrent writers: every increment lands exactly once.
	const writers = 8
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			errs <- s.GuaranteedUpdate(ctx, key("a"), &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
				c := cur.(*corev1.ConfigMap)
				c.Data[fmt.Sprint(i)] = "x"
				return c, nil
			})
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Get(ctx, key("a"), storage.GetOptions{}, got); err != nil || len(got.Data) != writers+1 {
		t.Fatalf("lost updates: %v %v", got.Data, err)
	}

	stale := "1"
	if err := s.Delete(ctx, key("a"), nil, &storage.Preconditions{ResourceVersion: &stale}, nil); !storage.IsConflict(err) {
		t.Fatalf("delete stale: %v", err)
	}
	del := &corev1.ConfigMap{}
	if err := s.Delete(ctx, key("a"), del, nil, nil); err != nil || del.Name != "a" {
		t.Fatalf("delete: %v %v", del, err)
	}
	if err := s.Delete(ctx, key("a"), nil, nil, nil); !storage.IsNotFound(err) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestGetList(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for i := range 10 {
		color := "red"
		if i%2 == 1 {
			color = "blue"
		}
		if err := s.Create(ctx, key(fmt.Sprintf("cm-%02d", i)), cm(fmt.Sprintf("cm-%02d", i), map[string]string{"color": color}), nil); err != nil {
			t.Fatal(err)
		}
	}
	// An object outside the prefix must never show up.
	if err := s.Create(ctx, "configmaps/nsx/other", cm("other", nil), nil); err != nil {
		t.Fatal(err)
	}
	red := labels.SelectorFromSet(labels.Set{"color": "red"})
	tests := []struct {
		name      string
		opts      storage.ListOptions
		want      int
		cont      bool
		remaining int64 // -1 = unset
	}{
		{name: "all", opts: storage.ListOptions{}, want: 10, remaining: -1},
		{name: "rv0", opts: storage.ListOptions{ResourceVersion: "0"}, want: 10, remaining: -1},
		{name: "label", opts: storage.ListOptions{Predicate: storage.Predicate{Label: red}}, want: 5, remaining: -1},
		{name: "limit", opts: storage.ListOptions{Limit: 3}, want: 3, cont: true, remaining: 7},
		{name: "limit exact", opts: storage.ListOptions{Limit: 10}, want: 10, remaining: -1},
		{name: "limit label", opts: storage.ListOptions{Limit: 2, Predicate: storage.Predicate{Label: red}}, want: 2, cont: true, remaining: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Recursive = true
			list := &corev1.ConfigMapList{}
			if err := s.GetList(ctx, "configmaps/ns", tc.opts, list); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != tc.want {
				t.Fatalf("got %d items, want %d", len(list.Items), tc.want)
			}
			if (list.Continue != "") != tc.cont {
				t.Fatalf("continue %q, want set=%v", list.Continue, tc.cont)
			}
			if tc.remaining < 0 && list.RemainingItemCount != nil || tc.remaining >= 0 && (list.RemainingItemCount == nil || *list.RemainingItemCount != tc.remaining) {
				t.Fatalf("remainingItemCount %v, want %d", list.RemainingItemCount, tc.remaining)
			}
			if list.ResourceVersion == "" {
				t.Fatal("list without resourceVersion")
			}
		})
	}

	t.Run("paging walks everything once", func(t *testing.T) {
		seen := map[string]bool{}
		opts := storage.ListOptions{Recursive: true, Limit: 3}
		var rv string
		for {
			list := &corev1.ConfigMapList{}
			if err := s.GetList(ctx, "configmaps/ns", opts, list); err != nil {
				t.Fatal(err)
			}
			if rv == "" {
				rv = list.ResourceVersion
				// Writes after the first page must not show in later pages.
				if err := s.Create(ctx, key("cm-99"), cm("cm-99", nil), nil); err != nil {
					t.Fatal(err)
				}
			} else if list.ResourceVersion != rv {
				t.Fatalf("page rv %s != first page rv %s", list.ResourceVersion, rv)
			}
			for _, it := range list.Items {
				if seen[it.Name] {
					t.Fatalf("%s twice", it.Name)
				}
				seen[it.Name] = true
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
		if len(seen) != 10 {
			t.Fatalf("saw %d, want 10", len(seen))
		}
	})

	t.Run("exact rv", func(t *testing.T) {
		list := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true}, list); err != nil {
			t.Fatal(err)
		}
		rv := list.ResourceVersion
		if err := s.Delete(ctx, key("cm-00"), nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		old := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rv, ResourceVersionMatch: "Exact"}, old); err != nil {
			t.Fatal(err)
		}
		if len(old.Items) != len(list.Items) || old.ResourceVersion != rv {
			t.Fatalf("exact list: %d items at %s, want %d at %s", len(old.Items), old.ResourceVersion, len(list.Items), rv)
		}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: "99999999"}, old); storage.Code(err) != storage.ErrCodeTooLargeRV {
			t.Fatalf("future rv: %v", err)
		}
		if _, err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rv, ResourceVersionMatch: "Exact"}, old); !storage.IsExpired(err) {
			t.Fatalf("compacted exact list: %v", err)
		}
	})

	t.Run("bad continue", func(t *testing.T) {
		for _, tok := range []string{"!!", "e30", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi9zZWNyZXRzIn0"} {
			err := s.GetList(ctx, "configmaps/ns", storage.ListOptions{Recursive: true, Continue: tok}, &corev1.ConfigMapList{})
			if storage.Code(err) != storage.ErrCodeInvalidRV {
				t.Fatalf("continue %q: %v", tok, err)
			}
		}
	})
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

func TestWatch(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	first := &corev1.ConfigMap{}
	if err := s.Create(ctx, key("a"), cm("a", map[string]string{"color": "red"}), first); err != nil {
		t.Fatal(err)
	}

	t.Run("rv0 sends state then changes", func(t *testing.T) {
		w, err := s.Watch(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: "0", Recursive: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "a" {
			t.Fatalf("initial: %v", ev)
		}
		if err := s.Create(ctx, key("b"), cm("b", nil), nil); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "b" {
			t.Fatalf("add: %v", ev)
		}
	})

	t.Run("from rv, with selector transitions", func(t *testing.T) {
		red := labels.SelectorFromSet(labels.Set{"color": "red"})
		w, err := s.Watch(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: first.ResourceVersion, Recursive: true, Predicate: storage.Predicate{Label: red}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// b (no labels) was created after first: filtered out. Relabel a to blue: DELETED.
		if err := s.GuaranteedUpdate(ctx, key("a"), &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.ConfigMap).Labels["color"] = "blue"
			return cur, nil
		}); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, w); ev.Type != watch.Deleted {
			t.Fatalf("leaving selector: %v", ev.Type)
		}
		if err := s.GuaranteedUpdate(ctx, key("b"), &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.ConfigMap).Labels = map[string]string{"color": "red"}
			return cur, nil
		}); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "b" {
			t.Fatalf("entering selector: %v", ev)
		}
		del := &corev1.ConfigMap{}
		if err := s.Delete(ctx, key("b"), del, nil, nil); err != nil {
			t.Fatal(err)
		}
		ev := next(t, w)
		// Both the watch and the delete's answer carry the deletion revision, as upstream.
		if ev.Type != watch.Deleted || ev.Object.(*corev1.ConfigMap).ResourceVersion != del.ResourceVersion {
			t.Fatalf("delete answered rv %s, watch: %v (rv must be the deletion revision)", del.ResourceVersion, ev)
		}
	})

	t.Run("bookmarks", func(t *testing.T) {
		rev, _ := s.Revision(ctx)
		w, err := s.Watch(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: storage.FormatRV(rev), Recursive: true, AllowBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// A write elsewhere moves the revision; the bookmark reports it.
		if err := s.Create(ctx, "configmaps/elsewhere/x", cm("x", nil), nil); err != nil {
			t.Fatal(err)
		}
		ev := next(t, w)
		if ev.Type != watch.Bookmark || ev.Object.(*corev1.ConfigMap).ResourceVersion == "" {
			t.Fatalf("want bookmark, got %v", ev)
		}
	})

	t.Run("compacted rv gives 410", func(t *testing.T) {
		old := first.ResourceVersion
		if _, err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		w, err := s.Watch(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: old, Recursive: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ev := next(t, w)
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("want 410 Expired error event, got %v %+v", ev.Type, ev.Object)
		}
	})

	t.Run("stop closes", func(t *testing.T) {
		w, err := s.Watch(ctx, "configmaps/ns", storage.ListOptions{ResourceVersion: "0", Recursive: true})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
			case <-deadline:
				t.Fatal("channel not closed after Stop")
			}
		}
	})
}

// TestWritesSurviveLeaderDeath: the etcd leader of a three-member cluster stops; writes sent
// through a surviving member right after it all succeed within their callers' time, with
// bounded and retried attempts, and each is applied exactly once. (An in-process member can
// only be closed, which its peers notice at once; the silent death that loses forwarded
// proposals, where the retry matters, is the drill's kill-master.)
func TestWritesSurviveLeaderDeath(t *testing.T) {
	urls := make([]string, 6)
	for i := range urls {
		u, err := embedetcd.FreeLocalURL()
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = u
	}
	cluster := fmt.Sprintf("e0=%s,e1=%s,e2=%s", urls[1], urls[3], urls[5])
	members := make([]*embedetcd.Server, 3)
	errs := make(chan error, 3)
	for i := range members {
		go func() {
			m, err := embedetcd.Start(embedetcd.Config{Name: fmt.Sprint("e", i), DataDir: t.TempDir(), ClientURL: urls[2*i], PeerURL: urls[2*i+1],
				InitialCluster: cluster, InitialClusterState: "new", UnsafeNoFsync: true, LogLevel: "off", StartTimeout: 30 * time.Second,
				HeartbeatInterval: 50 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond})
			members[i] = m
			errs <- err
		}()
	}
	for range members {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range members {
		t.Cleanup(m.Close)
	}
	clients := make([]*clientv3.Client, 3)
	leader := -1
	for i, m := range members {
		c, err := m.Client()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients[i] = c
		st, err := c.Status(context.Background(), m.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	via := (leader + 1) % 3
	s := storage.New(clients[via], storage.Config{Prefix: "/registry", NewFunc: func() runtime.Object { return &corev1.ConfigMap{} },
		AttemptTimeout: 500 * time.Millisecond})

	members[leader].Close()
	const n = 20
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		obj := cm(fmt.Sprint("after-", i), nil)
		obj.UID = types.UID(fmt.Sprint("uid-", i))
		err := s.Create(ctx, key(obj.Name), obj, &corev1.ConfigMap{})
		cancel()
		if err != nil {
			t.Fatalf("create %d after the leader died: %v", i, err)
		}
	}
	list := &corev1.ConfigMapList{}
	if err := s.GetList(context.Background(), "configmaps/ns", storage.ListOptions{Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("%d objects stored, want %d (each create exactly once)", len(list.Items), n)
	}
}
