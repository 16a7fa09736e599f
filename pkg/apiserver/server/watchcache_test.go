package server_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// configMapCache is the watch cache of configmaps in s.
func configMapCache(t *testing.T, s *server.Server) *storage.Cacher {
	t.Helper()
	c, ok := s.Registry().Resource(schema.GroupResource{Resource: "configmaps"}).Store.Storage().(*storage.Cacher)
	if !ok {
		t.Fatal("configmaps have no watch cache")
	}
	return c
}

// changeLog records what an informer's handlers saw of each object: the values of its "n"
// key, one per change (a new resourceVersion), in the order seen.
type changeLog struct {
	mu   sync.Mutex
	seen map[string][]int
	rv   map[string]string
	errs []string
}

func (l *changeLog) add(cm *corev1.ConfigMap, deleted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := strconv.Atoi(cm.Data["n"])
	if deleted {
		n = -1
	}
	if prev, ok := l.rv[cm.Name]; ok && !deleted && prev == cm.ResourceVersion {
		return // a relist's or resync's update, not a change
	}
	if s := l.seen[cm.Name]; len(s) > 0 && s[len(s)-1] >= n && n >= 0 {
		l.errs = append(l.errs, fmt.Sprintf("%s: %d after %v", cm.Name, n, s))
	}
	l.seen[cm.Name] = append(l.seen[cm.Name], n)
	l.rv[cm.Name] = cm.ResourceVersion
}

func (l *changeLog) last(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen[name]
	if len(s) == 0 {
		return -2
	}
	return s[len(s)-1]
}

// An informer sees every change exactly once and in order while the watch cache restarts,
// etcd compacts its history and the informer's watch falls behind (is closed for overflow).
func TestWatchCacheInformerSeesEveryChange(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.WatchBookmarkInterval = 200 * time.Millisecond })
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	createNamespace(t, cs, "wc")
	cms := cs.CoreV1().ConfigMaps("wc")
	cacher := configMapCache(t, s)

	log := &changeLog{seen: map[string][]int{}, rv: map[string]string{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("wc"))
	inf := f.Core().V1().ConfigMaps().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { log.add(obj.(*corev1.ConfigMap), false) },
		UpdateFunc: func(_, obj any) { log.add(obj.(*corev1.ConfigMap), false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			log.add(obj.(*corev1.ConfigMap), true)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)

	const objects = 4
	next := 0 // the value of "n" the next round writes
	round := func(what string) {
		t.Helper()
		for range 5 {
			for i := range objects {
				name := fmt.Sprintf("cm%d", i)
				data := map[string]string{"n": strconv.Itoa(next)}
				if next == 0 {
					_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
				} else {
					_, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.UpdateOptions{})
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			next++
		}
		eventually(t, what+": the informer to see the last change", func() bool {
			for i := range objects {
				if log.last(fmt.Sprintf("cm%d", i)) != next-1 {
					return false
				}
			}
			return true
		})
	}
	// canary makes sure the informer watches again before the next round (a change it
	// only lists may be seen as one).
	canary := 0
	watching := func(what string) {
		t.Helper()
		canary++
		name := "canary"
		data := map[string]string{"n": strconv.Itoa(canary)}
		var err error
		if canary == 1 {
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
		} else {
			_, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, what+": the informer to see the canary", func() bool { return log.last(name) == canary })
	}
	wantAll := func(what string) {
		t.Helper()
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.errs) > 0 {
			t.Fatalf("%s: out of order or twice: %v", what, log.errs)
		}
		for i := range objects {
			name := fmt.Sprintf("cm%d", i)
			if got := log.seen[name]; len(got) != next {
				t.Fatalf("%s: %s seen as %v, want 0..%d once each", what, name, got, next-1)
			}
		}
	}

	round("start")
	wantAll("start")

	cacher.Restart()
	watching("after a cache restart")
	round("after a cache restart")
	wantAll("after a cache restart")

	if _, err := s.EtcdClient().Compact(ctx, mustRevision(t, s)); err != nil {
		t.Fatal(err)
	}
	round("after a compaction")
	wantAll("after a compaction")

	// Every live event now overflows a new watcher: the informer's watch is closed at
	// each change and starts again from where it was, out of the cache's history, or lists
	// again (client-go does after a watch that ended at once without events): changes may
	// then be seen together, but never twice or out of order.
	cacher.SetWatcherBuffer(0)
	cacher.Restart() // closes the informer's current watch, so it watches anew
	round("with a watch that falls behind")
	log.mu.Lock()
	if len(log.errs) > 0 {
		t.Fatalf("with a watch that falls behind: out of order or twice: %v", log.errs)
	}
	log.mu.Unlock()
	cacher.SetWatcherBuffer(storage.DefaultWatcherBuffer)
	cacher.Restart()
	watching("after the watch caught up")
	before := next
	round("after the watch caught up")
	log.mu.Lock()
	defer log.mu.Unlock()
	for i := range objects {
		name := fmt.Sprintf("cm%d", i)
		got := log.seen[name]
		if len(got) < next-before || fmt.Sprint(got[len(got)-(next-before):]) != fmt.Sprint(seq(before, next)) {
			t.Fatalf("after the watch caught up: %s seen as %v, want %v at the end", name, got, seq(before, next))
		}
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func mustRevision(t *testing.T, s *server.Server) int64 {
	t.Helper()
	resp, err := s.EtcdClient().Get(context.Background(), "/registry/none")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// A list at resourceVersion=0 never answers from an older state than a list the client
// read before, whichever served it.
func TestWatchCacheListAtZeroNeverGoesBack(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	createNamespace(t, cs, "zero")
	cms := cs.CoreV1().ConfigMaps("zero")
	cacher := configMapCache(t, s)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writes all along
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i)}}, metav1.CreateOptions{})
		}
	}()
	defer func() { close(done); wg.Wait() }()

	var seen int64
	check := func(opts metav1.ListOptions, what string) {
		t.Helper()
		l, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
		if rv < seen {
			t.Fatalf("%s: list at %d after one at %d", what, rv, seen)
		}
		seen = rv
	}
	for i := range 30 {
		check(metav1.ListOptions{}, "consistent list")
		check(metav1.ListOptions{ResourceVersion: "0"}, "list at 0")
		check(metav1.ListOptions{ResourceVersion: "0", Limit: 2}, "paged list at 0")
		if i%10 == 5 {
			cacher.Restart() // lists go to etcd meanwhile
		}
		check(metav1.ListOptions{ResourceVersion: "0"}, "list at 0")
	}
}

// Events have no watch cache unless --watch-cache-sizes names them, as kube-apiserver's
// defaults; their lists and watches (both groups) are then served from etcd.
func TestEventsWatchCacheOffByDefault(t *testing.T) {
	events := schema.GroupResource{Resource: "events"}
	for _, tc := range []struct {
		sizes  []string
		cached bool
	}{{nil, false}, {[]string{"events#100"}, true}} {
		t.Run(fmt.Sprint(tc.sizes), func(t *testing.T) {
			s := servertest.New(t, func(c *server.Config) { c.WatchCacheSizes = tc.sizes })
			if _, ok := s.Registry().Resource(events).Store.Storage().(*storage.Cacher); ok != tc.cached {
				t.Fatalf("events cached = %v, want %v", ok, tc.cached)
			}
			if _, ok := s.Registry().Resource(schema.GroupResource{Resource: "pods"}).Store.Storage().(*storage.Cacher); !ok {
				t.Fatal("pods have no watch cache")
			}
			cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatal(err)
			}
			core, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer core.Stop()
			v1, err := cs.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer v1.Stop()
			ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
				Reason: "Tested", Message: "m", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "test"}}
			created, err := cs.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range map[string]watch.Interface{"core/v1": core, "events.k8s.io/v1": v1} {
				select {
				case e := <-w.ResultChan():
					m, err := meta.Accessor(e.Object)
					if e.Type != watch.Added || err != nil || m.GetName() != "e1" || m.GetResourceVersion() != created.ResourceVersion {
						t.Fatalf("%s watch: %s %#v", name, e.Type, e.Object)
					}
				case <-ctx.Done():
					t.Fatalf("%s watch: no event", name)
				}
			}
			got, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil || len(got.Items) != len(list.Items)+1 {
				t.Fatalf("list after create: %v, %d items, want %d", err, len(got.Items), len(list.Items)+1)
			}
		})
	}
}
