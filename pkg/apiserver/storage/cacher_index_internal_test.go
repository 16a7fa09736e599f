package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// podAttrs are a pod's labels and a few of its selectable fields.
func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(p.Labels), fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace,
		"spec.nodeName": p.Spec.NodeName, "status.phase": string(p.Status.Phase)}, nil
}

// indexCase is one watch of the test: a scope (a namespace's key prefix or every pod's)
// and selectors.
type indexCase struct {
	scope, label, field string
}

func (c indexCase) String() string { return c.scope + "?" + c.label + "&" + c.field }

func (c indexCase) predicate(t *testing.T) Predicate {
	t.Helper()
	p := Predicate{GetAttrs: podAttrs}
	var err error
	if c.label != "" {
		if p.Label, err = labels.Parse(c.label); err != nil {
			t.Fatal(err)
		}
	}
	if c.field != "" {
		if p.Field, err = fields.ParseSelector(c.field); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

var indexCases = []indexCase{
	{scope: "pods"},
	{scope: "pods", field: "metadata.name=p1"},
	{scope: "pods", field: "metadata.name=p4"},
	{scope: "pods/ns1", field: "metadata.name=p2"},
	{scope: "pods", field: "spec.nodeName=n1"},
	{scope: "pods", field: "spec.nodeName=n2"},
	{scope: "pods", field: "spec.nodeName="},
	{scope: "pods", field: "spec.nodeName=n1,metadata.name=p3"},
	{scope: "pods", field: "spec.nodeName=n2,status.phase=Running"},
	{scope: "pods", field: "spec.nodeName!=n1"},
	{scope: "pods", field: "metadata.namespace=ns2"},
	{scope: "pods/ns2", label: "app=a", field: "spec.nodeName=n1"},
	{scope: "pods", label: "app=b"},
}

// indexOp is one write of the test and what the store answered.
type indexOp struct {
	key       string
	prev, obj *corev1.Pod // nil prev: created; nil obj: deleted
	rev       int64
}

// randomPodWrites creates, reschedules, relabels and deletes pods at random through c.
func randomPodWrites(t *testing.T, c *Cacher, rng *rand.Rand, n int) []indexOp {
	t.Helper()
	ctx := context.Background()
	nodes := []string{"", "n1", "n2", "n3"}
	live := map[string]*corev1.Pod{}
	var ops []indexOp
	for range n {
		ns, name := "ns"+strconv.Itoa(1+rng.IntN(2)), "p"+strconv.Itoa(rng.IntN(6))
		op := indexOp{key: "pods/" + ns + "/" + name, prev: live["pods/"+ns+"/"+name]}
		out := &corev1.Pod{}
		var err error
		switch {
		case op.prev == nil:
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": []string{"a", "b"}[rng.IntN(2)]}},
				Spec: corev1.PodSpec{NodeName: nodes[rng.IntN(len(nodes))]}}
			err = c.Create(ctx, op.key, p, out)
			op.obj = out
		case rng.IntN(5) == 0:
			if err = c.Delete(ctx, op.key, out, nil, nil); err == nil {
				op.rev, err = c.Revision(ctx) // the deletion's: nobody else writes
			}
		default:
			err = c.GuaranteedUpdate(ctx, op.key, out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
				p := cur.(*corev1.Pod)
				switch rng.IntN(3) {
				case 0:
					p.Spec.NodeName = nodes[rng.IntN(len(nodes))]
				case 1:
					p.Labels = map[string]string{"app": []string{"a", "b"}[rng.IntN(2)]}
				default:
					p.Status.Phase = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning}[rng.IntN(2)]
				}
				return p, nil
			})
			op.obj = out
		}
		if err != nil {
			t.Fatalf("%s: %v", op.key, err)
		}
		if op.obj != nil {
			op.rev = mustParseRV(t, op.obj.ResourceVersion)
			if op.prev != nil && op.obj.ResourceVersion == op.prev.ResourceVersion {
				continue // nothing changed: nothing written
			}
		}
		ops = append(ops, op)
		live[op.key] = op.obj
	}
	return ops
}

// expectedEvents is what a watch of ic sees of ops, by the predicate's own matching of
// each object (no cache, no index): entering the selection is ADDED, leaving it DELETED.
func expectedEvents(t *testing.T, ic indexCase, ops []indexOp) []string {
	t.Helper()
	p := ic.predicate(t)
	in := func(pod *corev1.Pod) bool { return pod != nil && matches(p, pod) }
	var out []string
	for _, op := range ops {
		if len(op.key) <= len(ic.scope) || op.key[:len(ic.scope)+1] != ic.scope+"/" {
			continue
		}
		var typ watch.EventType
		switch cur, prev := in(op.obj), in(op.prev); {
		case cur && prev:
			typ = watch.Modified
		case cur:
			typ = watch.Added
		case prev:
			typ = watch.Deleted
		default:
			continue
		}
		out = append(out, fmt.Sprintf("%s %s@%d", typ, op.key, op.rev))
	}
	return out
}

// eventsUntil reads w's events until a bookmark at rev or later.
func eventsUntil(t *testing.T, w watch.Interface, rev int64) []string {
	t.Helper()
	var out []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			pod := ev.Object.(*corev1.Pod)
			at := mustParseRV(t, pod.ResourceVersion)
			if ev.Type == watch.Bookmark {
				if at >= rev {
					return out
				}
				continue
			}
			out = append(out, fmt.Sprintf("%s pods/%s/%s@%d", ev.Type, pod.Namespace, pod.Name, at))
		case <-timeout:
			t.Fatalf("no bookmark at %d in 20s; events so far: %v", rev, out)
		}
	}
}

// TestCacherIndexedWatchers: watchers kept by metadata.name and spec.nodeName get exactly
// the events the predicate's own matching gives, through scheduling, rescheduling,
// relabelling and deletion (a pod moving from n1 to n2 is DELETED for n1's watcher and
// ADDED for n2's), whether they watch from now or replay the history; lists with the
// cached attributes equal etcd's; stopped watchers leave the index.
func TestCacherIndexedWatchers(t *testing.T) {
	inner := New(etcdtest.Client(t), Config{Prefix: "/registry", NewFunc: func() runtime.Object { return &corev1.Pod{} }})
	c := NewCacher(inner, CacherConfig{KeyRoot: "pods", BookmarkInterval: 100 * time.Millisecond, Metrics: NewCacherMetrics(),
		Attrs: podAttrs, IndexFields: []string{"spec.nodeName"}})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	ctx := context.Background()
	for !c.Ready() {
		time.Sleep(5 * time.Millisecond) // poll
	}
	start, err := c.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	watchFrom := func(ic indexCase, rev int64) watch.Interface {
		w, err := c.Watch(ctx, ic.scope, ListOptions{ResourceVersion: strconv.FormatInt(rev, 10), Recursive: true,
			AllowBookmarks: true, Predicate: ic.predicate(t)})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	var live []watch.Interface
	for _, ic := range indexCases {
		live = append(live, watchFrom(ic, start))
	}
	c.mu.Lock()
	indexed := len(c.watchers.all) - len(c.watchers.rest)
	c.mu.Unlock()
	if indexed != 9 {
		t.Fatalf("%d watchers indexed by metadata.name or spec.nodeName, want 9", indexed)
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ops := randomPodWrites(t, c, rand.New(rand.NewPCG(seed, 1)), 150)
	last := ops[len(ops)-1].rev
	for i, ic := range indexCases {
		want := expectedEvents(t, ic, ops)
		if got := eventsUntil(t, live[i], last); !slices.Equal(got, want) {
			t.Errorf("%s: live watch:\n got %v\nwant %v", ic, got, want)
		}
		replay := watchFrom(ic, start)
		if got := eventsUntil(t, replay, last); !slices.Equal(got, want) {
			t.Errorf("%s: watch replaying the history:\n got %v\nwant %v", ic, got, want)
		}
		replay.Stop()
		live[i].Stop()
		cached, fromEtcd := &corev1.PodList{}, &corev1.PodList{}
		opts := ListOptions{Recursive: true, Predicate: ic.predicate(t)}
		if err := c.GetList(ctx, ic.scope, opts, cached); err != nil {
			t.Fatal(err)
		}
		if err := inner.GetList(ctx, ic.scope, opts, fromEtcd); err != nil {
			t.Fatal(err)
		}
		if got, want := podKeys(cached), podKeys(fromEtcd); !slices.Equal(got, want) {
			t.Errorf("%s: list:\n got %v\nwant %v", ic, got, want)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.watchers.all); n != 0 || len(c.watchers.rest) != 0 || len(c.watchers.by[0]) != 0 || len(c.watchers.by[1]) != 0 {
		t.Fatalf("stopped watchers still kept: %d (rest %d, by name %d, by node %d)", n, len(c.watchers.rest), len(c.watchers.by[0]), len(c.watchers.by[1]))
	}
}

func podKeys(l *corev1.PodList) []string {
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
	}
	return out
}

func mustParseRV(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// BenchmarkCacherFanOut: one pod update through a pods cache watched as on a cluster of
// 1,000 nodes (each kubelet's watch by spec.nodeName, each node's three mounted Secrets'
// watches by metadata.name, here on pods too, and ten unfiltered controllers): with
// attributes and the index (as the registry configures it) and without (every watcher
// tests the event, building its field set again).
func BenchmarkCacherFanOut(b *testing.B) {
	for _, bc := range []struct {
		name    string
		indexed bool
	}{{"indexed", true}, {"unindexed", false}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := CacherConfig{KeyRoot: "pods", Metrics: NewCacherMetrics(), WatcherBuffer: 1 << 20}
			if bc.indexed {
				cfg.Attrs, cfg.IndexFields = podAttrs, []string{"spec.nodeName"}
			}
			inner := New(etcdtest.Client(b), Config{Prefix: "/registry", NewFunc: func() runtime.Object { return &corev1.Pod{} }})
			c := NewCacher(inner, cfg)
			c.Start(context.Background())
			b.Cleanup(c.Stop)
			for !c.Ready() {
				time.Sleep(5 * time.Millisecond) // poll
			}
			watchAll(b, c)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"}, Spec: corev1.PodSpec{NodeName: "n5"}}
			value, err := JSONCodec{}.Encode(pod)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				rev := int64(i + 2)
				ev := &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte("/registry/pods/ns/p"), Value: value, ModRevision: rev}}
				if err := c.apply([]*clientv3.Event{ev}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// watchAll opens the watches of BenchmarkCacherFanOut and drains them.
func watchAll(b *testing.B, c *Cacher) {
	b.Helper()
	var preds []Predicate
	for n := range 1000 {
		preds = append(preds, Predicate{GetAttrs: podAttrs, Field: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("n%d", n))})
		for s := range 3 {
			preds = append(preds, Predicate{GetAttrs: podAttrs, Field: fields.OneTermEqualSelector("metadata.name", fmt.Sprintf("s%d-%d", n, s))})
		}
	}
	for range 10 {
		preds = append(preds, Predicate{GetAttrs: podAttrs})
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	for _, p := range preds {
		w, err := c.Watch(ctx, "pods", ListOptions{ResourceVersion: "1", Recursive: true, Predicate: p})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range w.ResultChan() {
			}
		}()
	}
}
