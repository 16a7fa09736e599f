package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func newRegistry(t testing.TB) *controlplane.Registry {
	t.Helper()
	c := etcdtest.Client(t)
	r := controlplane.New(c, controlplane.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.Wait() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func store(r *controlplane.Registry, group, resource string) *registry.Store {
	return r.Resource(schema.GroupResource{Group: group, Resource: resource}).Store
}

func put(obj runtime.Object) registry.TransformFunc {
	return func(context.Context, runtime.Object) (runtime.Object, error) { return obj, nil }
}

func deployment(name string) *appsv1.Deployment {
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			},
		},
	}
}

func TestCreateRules(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	cms := store(r, "", "configmaps")
	pods := store(r, "", "pods")

	tests := []struct {
		name   string
		store  *registry.Store
		ns     string
		obj    runtime.Object
		check  func(error) bool
		causes []string
	}{
		{"missing namespace", cms, "nope", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, apierrors.IsNotFound, nil},
		{"bad name", cms, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, apierrors.IsInvalid, []string{"metadata.name"}},
		{"no name", cms, "default", &corev1.ConfigMap{}, apierrors.IsInvalid, []string{"metadata.name"}},
		{"bad key", cms, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"a/b": "x"}}, apierrors.IsInvalid, []string{"data[a/b]"}},
		{"pod without containers", pods, "default", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, apierrors.IsInvalid, []string{"spec.containers"}},
		{"pod without image", pods, "default", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}, apierrors.IsInvalid, []string{"spec.containers[0].image"}},
		{"namespace mismatch", cms, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "kube-system"}}, apierrors.IsBadRequest, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.store.Create(ctx, tc.ns, "", tc.obj, &metav1.CreateOptions{})
			if !tc.check(err) {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(tc.causes) > 0 {
				st := err.(apierrors.APIStatus).Status()
				for _, want := range tc.causes {
					found := false
					for _, c := range st.Details.Causes {
						if c.Field == want {
							found = true
						}
					}
					if !found {
						t.Fatalf("no cause for %s in %+v", want, st.Details.Causes)
					}
				}
			}
		})
	}

	t.Run("generateName, uid, timestamp", func(t *testing.T) {
		obj, err := cms.Create(ctx, "default", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm := obj.(*corev1.ConfigMap)
		if len(cm.Name) != len("gen-")+5 || cm.UID == "" || cm.CreationTimestamp.IsZero() || cm.ResourceVersion == "" || cm.Kind != "ConfigMap" {
			t.Fatalf("server fields not set: %+v", cm.ObjectMeta)
		}
	})
	t.Run("dry run writes nothing", func(t *testing.T) {
		_, err := cms.Create(ctx, "default", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, &metav1.CreateOptions{DryRun: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Get(ctx, "default", "dry", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("dry run object stored: %v", err)
		}
	})
}

func TestUpdateRules(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	deps := store(r, "apps", "deployments")
	obj, err := deps.Create(ctx, "default", "", deployment("web"), &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := obj.(*appsv1.Deployment)
	if d.Generation != 1 || *d.Spec.Replicas != 1 || d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("defaults/generation: gen=%d %+v", d.Generation, d.Spec)
	}

	// A spec change bumps generation; a status change through the main resource is dropped.
	d2 := d.DeepCopy()
	three := int32(3)
	d2.Spec.Replicas = &three
	d2.Status.Replicas = 42
	obj, _, err = deps.Update(ctx, "default", "web", put(d2), &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d3 := obj.(*appsv1.Deployment)
	if d3.Generation != 2 || d3.Status.Replicas != 0 {
		t.Fatalf("gen=%d status.replicas=%d", d3.Generation, d3.Status.Replicas)
	}
	// Stale resourceVersion: conflict.
	if _, _, err := deps.Update(ctx, "default", "web", put(d2), &metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	// Status subresource: only status changes, generation stays.
	st := r.Resource(schema.GroupResource{Group: "apps", Resource: "deployments"}).Subresources["status"].(registry.Updater)
	d4 := d3.DeepCopy()
	d4.Status.Replicas = 3
	d4.Spec.Replicas = &three
	zero := int32(0)
	d4.Spec.Replicas = &zero
	obj, _, err = st.Update(ctx, "default", "web", put(d4), &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d5 := obj.(*appsv1.Deployment); d5.Status.Replicas != 3 || *d5.Spec.Replicas != 3 || d5.Generation != 2 {
		t.Fatalf("status update: status=%d spec=%d gen=%d", d5.Status.Replicas, *d5.Spec.Replicas, d5.Generation)
	}
	// Scale.
	sc := r.Resource(schema.GroupResource{Group: "apps", Resource: "deployments"}).Subresources["scale"].(registry.Updater)
	obj, _, err = sc.Update(ctx, "default", "web", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		s := cur.(*autoscalingv1.Scale)
		s.Spec.Replicas = 5
		return s, nil
	}, &metav1.UpdateOptions{})
	if err != nil || obj.(*autoscalingv1.Scale).Spec.Replicas != 5 {
		t.Fatalf("scale: %v %v", obj, err)
	}
	// Immutable selector.
	d6, _ := deps.Get(ctx, "default", "web", &metav1.GetOptions{})
	bad := d6.(*appsv1.Deployment).DeepCopy()
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	bad.Spec.Template.Labels = map[string]string{"app": "other"}
	if _, _, err := deps.Update(ctx, "default", "web", put(bad), &metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("selector change: %v", err)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	nss := store(r, "", "namespaces")
	cms := store(r, "", "configmaps")
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		if _, err := nss.Get(ctx, "", name, &metav1.GetOptions{}); err != nil {
			t.Fatalf("standard namespace %s: %v", name, err)
		}
	}
	if _, err := nss.Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if name == "b" {
			cm.Finalizers = []string{"example.com/keep"}
		}
		if _, err := cms.Create(ctx, "team", "", cm, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	obj, deleted, err := nss.Delete(ctx, "", "team", &metav1.DeleteOptions{})
	if err != nil || deleted || obj.(*corev1.Namespace).Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("delete namespace: deleted=%v %v %v", deleted, obj, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := nss.Get(ctx, "", "team", &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace still there: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	list, err := cms.List(ctx, "team", &metav1.ListOptions{})
	if err != nil || len(list.(*corev1.ConfigMapList).Items) != 0 {
		t.Fatalf("content left: %v %v", list, err)
	}
}

func TestFinalizers(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	cms := store(r, "", "configmaps")
	if _, err := cms.Create(ctx, "default", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f", Finalizers: []string{"x/y"}}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, deleted, err := cms.Delete(ctx, "default", "f", &metav1.DeleteOptions{})
	if err != nil || deleted || obj.(*corev1.ConfigMap).DeletionTimestamp == nil {
		t.Fatalf("delete with finalizer: %v %v", deleted, err)
	}
	_, _, err = cms.Update(ctx, "default", "f", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.ConfigMap).Finalizers = nil
		return cur, nil
	}, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "default", "f", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("object should be gone after its last finalizer: %v", err)
	}
}

func TestDefaultServiceAccount(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	if _, err := store(r, "", "namespaces").Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := store(r, "", "serviceaccounts")
	for _, ns := range []string{"default", "kube-system", "team"} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := sa.Get(ctx, ns, "default", &metav1.GetOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no default service account in %s: %v", ns, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
