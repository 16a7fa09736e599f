package informer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var configMaps = schema.GroupResource{Resource: "configmaps"}

// source is a registry store that counts its lists and watches, can hold up its next list
// and end its open watch, or have its next watch start from a compacted revision.
type source struct {
	*registry.Store

	mu      sync.Mutex
	lists   int
	watches int
	open    watch.Interface
	hold    chan struct{} // when set, the next list waits for it to close
	held    chan struct{} // closed when a list waits
	expired bool          // the next watch asks for revision 1
}

func (s *source) List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	s.lists++
	hold, held := s.hold, s.held
	s.hold = nil
	s.mu.Unlock()
	if hold != nil {
		close(held)
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.List(ctx, ns, opts)
}

func (s *source) Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	if s.expired {
		s.expired = false
		o := *opts
		o.ResourceVersion = "1"
		opts = &o
	}
	w, err := s.Store.Watch(ctx, ns, opts)
	s.open = w
	return w, err
}

// holdNextList makes the next list wait until the returned function is called.
func (s *source) holdNextList() (held <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hold := make(chan struct{})
	s.hold, s.held = hold, make(chan struct{})
	return s.held, func() { close(hold) }
}

func (s *source) counts() (lists, watches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, s.watches
}

// env is a registry on a real etcd and a factory over counting sources.
type env struct {
	t       *testing.T
	etcd    *clientv3.Client
	ctx     context.Context
	reg     *controlplane.Registry
	sources map[schema.GroupResource]*source
	f       *informer.Factory
}

func newEnv(t *testing.T, watchCache bool) *env {
	t.Helper()
	c := etcdtest.Client(t)
	r := controlplane.New(c, controlplane.Config{WatchCache: watchCache})
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{t: t, etcd: c, ctx: ctx, reg: r, sources: map[schema.GroupResource]*source{}}
	e.f = informer.NewFactory(func(gr schema.GroupResource) informer.Source {
		res := r.Resource(gr)
		if res == nil {
			return nil
		}
		s := &source{Store: res.Store}
		e.sources[gr] = s
		return s
	}, nil)
	t.Cleanup(func() { cancel(); r.Wait(); e.f.Wait() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) configMap(name string, data string) {
	e.t.Helper()
	cms := e.reg.Resource(configMaps).Store
	if _, err := cms.Get(e.ctx, "default", name, &metav1.GetOptions{}); err != nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": data}}
		if _, err := cms.Create(e.ctx, "default", "", cm, &metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	_, _, err := cms.Update(e.ctx, "default", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap).DeepCopy()
		cm.Data = map[string]string{"k": data}
		return cm, nil
	}, &metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deleteConfigMap(name string) {
	e.t.Helper()
	if _, _, err := e.reg.Resource(configMaps).Store.Delete(e.ctx, "default", name, &metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// recorder writes a handler's events as lines ("add a=1", "update b 1->2", "delete c").
type recorder struct {
	mu     sync.Mutex
	events []string
}

func data(cm *corev1.ConfigMap) string { return cm.Data["k"] }

func (r *recorder) handler() informer.Handler[*corev1.ConfigMap] {
	rec := func(format string, args ...any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, fmt.Sprintf(format, args...))
	}
	return informer.Handler[*corev1.ConfigMap]{
		OnAdd:    func(cm *corev1.ConfigMap) { rec("add %s=%s", cm.Name, data(cm)) },
		OnUpdate: func(old, cm *corev1.ConfigMap) { rec("update %s %s->%s", cm.Name, data(old), data(cm)) },
		OnDelete: func(cm *corev1.ConfigMap) { rec("delete %s", cm.Name) },
	}
}

// waitFor polls until the recorded events, sorted when unordered, are want.
func (r *recorder) waitFor(t *testing.T, unordered bool, want ...string) {
	t.Helper()
	if unordered {
		slices.Sort(want)
	}
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		r.mu.Lock()
		got = slices.Clone(r.events)
		r.mu.Unlock()
		if unordered {
			slices.Sort(got)
		}
		if len(got) >= len(want) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

func (e *env) synced(f interface{ WaitForSync(context.Context) error }) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := f.WaitForSync(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// TestSharedInformer: two consumers of one resource (typed differently) share one list and
// one watch; each handler gets the first list as adds, then every create, update and
// delete in order; the lister follows.
func TestSharedInformer(t *testing.T) {
	e := newEnv(t, true)
	e.configMap("a", "1")
	typed := informer.For[*corev1.ConfigMap](e.f, configMaps)
	untyped := informer.For[runtime.Object](e.f, configMaps)
	var r1, r2 recorder
	typed.AddHandler(r1.handler())
	var untypedEvents []watch.EventType
	var mu sync.Mutex
	untyped.AddHandler(informer.Handler[runtime.Object]{
		OnAdd: func(runtime.Object) { mu.Lock(); untypedEvents = append(untypedEvents, watch.Added); mu.Unlock() },
		OnUpdate: func(_, _ runtime.Object) {
			mu.Lock()
			untypedEvents = append(untypedEvents, watch.Modified)
			mu.Unlock()
		},
		OnDelete: func(runtime.Object) { mu.Lock(); untypedEvents = append(untypedEvents, watch.Deleted); mu.Unlock() },
	})
	e.f.Start(e.ctx)
	e.synced(e.f)
	r1.waitFor(t, false, "add a=1")
	typed.AddHandler(r2.handler()) // late: the store's content first
	r2.waitFor(t, false, "add a=1")

	e.configMap("b", "1")
	e.configMap("a", "2")
	e.deleteConfigMap("b")
	want := []string{"add b=1", "update a 1->2", "delete b"}
	r1.waitFor(t, false, want...)
	r2.waitFor(t, false, want...)
	if cm, ok := typed.Get("default", "a"); !ok || data(cm) != "2" {
		t.Errorf("lister a: %v %v", cm, ok)
	}
	if _, ok := typed.Get("default", "b"); ok {
		t.Error("lister still has b")
	}
	if n := len(untyped.List("default")); n != 1 {
		t.Errorf("untyped lister: %d objects, want 1", n)
	}
	mu.Lock()
	if want := []watch.EventType{watch.Added, watch.Added, watch.Modified, watch.Deleted}; !slices.Equal(untypedEvents, want) {
		t.Errorf("untyped handler: %v, want %v", untypedEvents, want)
	}
	mu.Unlock()
	if lists, watches := e.sources[configMaps].counts(); lists != 1 || watches != 1 {
		t.Errorf("%d lists and %d watches, want one each", lists, watches)
	}
}

// TestRelistAfterWatchEnds: when its watch ends, the informer lists again and tells the
// handlers what changed meanwhile, as client-go's relist: a delete for an object gone, an
// add for a new one, an update for every object still there (changed or not). While it is
// not watching, Watching is false.
func TestRelistAfterWatchEnds(t *testing.T) {
	e := newEnv(t, true)
	for _, n := range []string{"gone", "changed", "same"} {
		e.configMap(n, "1")
	}
	inf := informer.For[*corev1.ConfigMap](e.f, configMaps)
	var r recorder
	inf.AddHandler(r.handler())
	e.f.Start(e.ctx)
	e.synced(inf)
	r.waitFor(t, true, "add gone=1", "add changed=1", "add same=1")

	src := e.sources[configMaps]
	for deadline := time.Now().Add(30 * time.Second); !inf.Watching(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not watching after the first list")
		}
	}
	held, release := src.holdNextList()
	src.mu.Lock()
	src.open.Stop() // the watch ends, as when the watch cache drops a watcher
	src.mu.Unlock()
	<-held
	if inf.Watching() {
		t.Error("Watching while the watch is down")
	}
	e.deleteConfigMap("gone")
	e.configMap("changed", "2")
	e.configMap("new", "1")
	release()
	r.waitFor(t, true, "delete gone", "update changed 1->2", "update same 1->1", "add new=1")
	e.configMap("new", "2") // and it watches again
	r.waitFor(t, false, "update new 1->2")
	if !inf.Watching() {
		t.Error("not Watching after the relist")
	}
	if lists, watches := src.counts(); lists != 2 || watches != 2 {
		t.Errorf("%d lists and %d watches, want two each", lists, watches)
	}
}

// TestRelistAfterExpired: a watch refused with 410 Expired (its revision was compacted in
// etcd) makes the informer list again and go on from the new list.
func TestRelistAfterExpired(t *testing.T) {
	e := newEnv(t, false) // the watch goes to etcd
	for i := range 3 {
		e.configMap("a", fmt.Sprint(i))
	}
	rev, err := e.reg.Resource(configMaps).Store.Storage().Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.etcd.Compact(e.ctx, rev); err != nil {
		t.Fatal(err)
	}
	src := func() *source { return e.sources[configMaps] }
	inf := informer.For[*corev1.ConfigMap](e.f, configMaps)
	src().expired = true
	var r recorder
	inf.AddHandler(r.handler())
	e.f.Start(e.ctx)
	e.synced(inf)
	r.waitFor(t, false, "add a=2")
	r.waitFor(t, false, "update a 2->2") // the relist after the 410
	e.configMap("b", "1")
	r.waitFor(t, false, "add b=1")
	if lists, watches := src().counts(); lists != 2 || watches != 2 {
		t.Errorf("%d lists and %d watches, want two each", lists, watches)
	}
}

// TestFactorySynced: Synced names, in the order they were asked for, the informers that
// have not listed yet (one of a resource nobody serves never does); an informer asked for
// after Start starts at once.
func TestFactorySynced(t *testing.T) {
	e := newEnv(t, true)
	if err := e.f.Synced(); err != nil {
		t.Fatalf("before Start: %v", err)
	}
	informer.For[*corev1.Secret](e.f, schema.GroupResource{Resource: "nosuchresources"})
	e.f.Start(e.ctx)
	cms := informer.For[*corev1.ConfigMap](e.f, configMaps) // after Start
	e.synced(cms)
	err := e.f.Synced()
	if want := "1 informers not started yet: [nosuchresources (no storage for nosuchresources)]"; err == nil || err.Error() != want {
		t.Fatalf("Synced: %v, want %q", err, want)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.f.WaitForSync(ctx); err == nil || !strings.Contains(err.Error(), "nosuchresources") {
		t.Fatalf("WaitForSync: %v", err)
	}
	if got := e.f.Resources(); !slices.Equal(got, []schema.GroupResource{{Resource: "nosuchresources"}, configMaps}) {
		t.Errorf("Resources: %v", got)
	}
}

// TestNilFactory: a nil factory gives empty informers that never sync (plugins built
// without a server, as the benchmarks do).
func TestNilFactory(t *testing.T) {
	inf := informer.For[*corev1.ConfigMap](nil, configMaps)
	if inf.HasSynced() || len(inf.List("")) != 0 {
		t.Fatal("a nil factory's informer has content")
	}
	if _, ok := inf.Get("default", "a"); ok {
		t.Fatal("Get found something")
	}
}
