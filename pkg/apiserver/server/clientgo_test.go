package server_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// eventually waits for cond. Its deadline is above client-go's reflector backoff (up to 30 s
// between attempts, plus as much jitter, once a server has been unreachable for a while), so
// an informer merely waiting out its backoff under load is not taken for one that never
// recovers.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestTypedClient(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	createNamespace(t, cs, "typed")

	cms := cs.CoreV1().ConfigMaps("typed")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) && !apierrors.IsBadRequest(err) {
		t.Fatalf("duplicate: %v", err)
	}
	stale := cm.DeepCopy()
	cm.Data["k"] = "v2"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil || cm.Data["k"] != "v2" {
		t.Fatalf("update: %v", err)
	}
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	cm, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"m":"p"}}`), metav1.PatchOptions{})
	if err != nil || cm.Data["m"] != "p" {
		t.Fatalf("merge patch: %v", err)
	}
	cm, err = cms.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"y":"2"}}}`), metav1.PatchOptions{})
	if err != nil || cm.Labels["y"] != "2" || cm.Labels["x"] != "1" {
		t.Fatalf("strategic patch: %v %v", cm.Labels, err)
	}
	if _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: %v", err)
	}

	// Paging with remainingItemCount, label selection.
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("page-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil || len(page.Items) != 2 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 4 {
		t.Fatalf("page 1: %d items, continue %q, remaining %v, %v", len(page.Items), page.Continue, page.RemainingItemCount, err)
	}
	rest, err := cms.List(ctx, metav1.ListOptions{Limit: 10, Continue: page.Continue})
	if err != nil || len(rest.Items) != 4 || rest.Continue != "" {
		t.Fatalf("page 2: %d %v", len(rest.Items), err)
	}
	sel, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "y=2"})
	if err != nil || len(sel.Items) != 1 {
		t.Fatalf("label selector: %v %v", sel, err)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=1"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: %v", err)
	}
	rv0, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil || len(rv0.Items) != 6 {
		t.Fatalf("rv=0 list: %v", err)
	}

	// Pods: status subresource and binding.
	pods := cs.CoreV1().Pods("typed")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil || pod.Status.Phase != corev1.PodPending {
		t.Fatalf("pod create: %v", err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Spec.Containers[0].Image = "changed-by-status"
	pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil || pod.Status.Phase != corev1.PodRunning || pod.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("update status: %v", err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, _ = pods.Get(ctx, "p", metav1.GetOptions{})
	if pod.Spec.NodeName != "n1" {
		t.Fatalf("binding did not set nodeName: %q", pod.Spec.NodeName)
	}
	byNode, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil || len(byNode.Items) != 1 {
		t.Fatalf("field selector spec.nodeName: %v", err)
	}

	// Deployments: scale subresource.
	deps := cs.AppsV1().Deployments("typed")
	lbl := map[string]string{"app": "d"}
	_, err = deps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: lbl},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale, err := deps.GetScale(ctx, "d", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 {
		t.Fatalf("get scale: %v", err)
	}
	scale.Spec.Replicas = 4
	if _, err := deps.UpdateScale(ctx, "d", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _ := deps.Get(ctx, "d", metav1.GetOptions{})
	if *d.Spec.Replicas != 4 || d.Generation != 2 {
		t.Fatalf("scale: replicas=%d generation=%d", *d.Spec.Replicas, d.Generation)
	}

	// Leases, as leader election uses them.
	leases := cs.CoordinationV1().Leases("typed")
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To(int32(15))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("you")
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Delete with a stale precondition, then for real; deletecollection.
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(stale.ResourceVersion)}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with stale precondition: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	left, _ := cms.List(ctx, metav1.ListOptions{})
	if len(left.Items) != 0 {
		t.Fatalf("deletecollection left %d", len(left.Items))
	}
}

func TestWatchTypedClient(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, TimeoutSeconds: ptr.To(int64(30))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []watch.EventType{watch.Added, watch.Deleted} {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want || ev.Object.(*corev1.ConfigMap).Name != "w" {
				t.Fatalf("got %v %T, want %v", ev.Type, ev.Object, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event", want)
		}
	}
	// The server ending watches (as on shutdown) closes the client's channel.
	s.CloseWatches()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch not closed")
	}
}

func TestDynamicClient(t *testing.T) {
	s := servertest.New(t, nil)
	dc := dynamic.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "dyn"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "dyn"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "dyn"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		},
	}}
	res := dc.Resource(gvr).Namespace("default")
	got, err := res.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 1 {
		t.Fatalf("defaulted replicas = %d", r)
	}
	got, err = res.Patch(ctx, "dyn", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":3}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
		t.Fatalf("patched replicas = %d", r)
	}
	list, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list all namespaces: %v", err)
	}
	if err := res.Delete(ctx, "dyn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Get(ctx, "dyn", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestInformer: a shared informer syncs, sees add/update/delete, and when
// the revision it last saw has been compacted while it was disconnected, it
// relists (after 410 Expired) and carries on. The apiserver uses an external
// etcd here so that it can go away and come back on the same port while
// another apiserver changes and compacts the data.
func TestInformer(t *testing.T) {
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	start := func(port int) *server.Server {
		t.Helper()
		cfg, err := servertest.Config(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.SecurePort = port
		cfg.EtcdServers = []string{etcd.ClientURL()}
		s, err := servertest.Start(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown() })
		return s
	}
	s1 := start(0)
	restCfg := servertest.RestConfig(t, s1)
	port := s1.Listener().Addr().(*net.TCPAddr).Port
	cs := kubernetes.NewForConfigOrDie(restCfg)
	ctx := context.Background()
	createNamespace(t, cs, "inf")
	cms := cs.CoreV1().ConfigMaps("inf")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("inf"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	events := map[string]int{}
	record := func(kind string, obj any) {
		mu.Lock()
		defer mu.Unlock()
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			events[kind+"/"+cm.Name]++
		}
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			// Only a relist turns a deletion into a tombstone.
			if cm, ok := d.Obj.(*corev1.ConfigMap); ok {
				events[kind+"/"+cm.Name]++
				events["tombstone/"+cm.Name]++
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		UpdateFunc: func(_, obj any) { record("update", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	seen := func(key string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return events[key] > 0 }
	}
	eventually(t, "initial add", seen("add/before"))

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "add x", seen("add/x"))
	if _, err := cms.Patch(ctx, "x", types.MergePatchType, []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "update x", seen("update/x"))
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "delete x", seen("delete/x"))

	// The informer's apiserver goes away; another one changes and compacts the data.
	if err := s1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	s2 := start(0)
	cs2 := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s2))
	if err := cs2.CoreV1().ConfigMaps("inf").Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs2.CoreV1().ConfigMaps("inf").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "while-away"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := s2.EtcdClient().Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.EtcdClient().Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	// Back on the informer's port: its watch from the compacted revision gets 410 and it relists.
	start(port)
	eventually(t, "deletion of 'before' after relist", seen("delete/before"))
	eventually(t, "add of 'while-away' after relist", seen("add/while-away"))
	if !seen("tombstone/before")() {
		t.Fatalf("deletion of 'before' did not come from a relist: %v", events)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "add after relist", seen("add/after"))
}
