package endpoints

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// deploymentStorage is the least a scope needs of a storage to build a field manager.
type deploymentStorage struct{}

func (deploymentStorage) New() runtime.Object { return &appsv1.Deployment{} }
func (deploymentStorage) Kind() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("Deployment")
}

func deployment20() *appsv1.Deployment {
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Labels: map[string]string{"app": "d"}}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}}
	for c := range 20 {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%02d", c), Image: "app:1",
			Ports: []corev1.ContainerPort{{ContainerPort: int32(8000 + c), Protocol: corev1.ProtocolTCP}}, Env: []corev1.EnvVar{{Name: "I", Value: fmt.Sprint(c)}}})
	}
	return d
}

func deploymentScope() *scope {
	names := &registry.Names{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}
	return &scope{names: names, storage: deploymentStorage{}, kind: appsv1.SchemeGroupVersion.WithKind("Deployment"), typed: true}
}

// TestTrackCreate: a create records one Update entry of its manager owning what it set, with
// upstream's keys for the list-maps (containers by name, ports by containerPort and protocol).
func TestTrackCreate(t *testing.T) {
	s := deploymentScope()
	out := s.trackUpdate(nil, deployment20(), "creator").(*appsv1.Deployment)
	if len(out.ManagedFields) != 1 {
		t.Fatalf("managedFields = %+v", out.ManagedFields)
	}
	e := out.ManagedFields[0]
	if e.Manager != "creator" || e.Operation != metav1.ManagedFieldsOperationUpdate || e.APIVersion != "apps/v1" || e.Time == nil {
		t.Fatalf("entry = %+v", e)
	}
	for _, want := range []string{`"k:{\"name\":\"c19\"}"`, `"k:{\"containerPort\":8019,\"protocol\":\"TCP\"}"`, `"k:{\"name\":\"I\"}"`} {
		if !strings.Contains(e.FieldsV1.GetRawString(), want) {
			t.Fatalf("fieldsV1 lacks %s: %s", want, e.FieldsV1.GetRawString())
		}
	}
}

func TestManagerOrUserAgent(t *testing.T) {
	long := strings.Repeat("a", 200)
	for _, tt := range []struct{ name, manager, ua, want string }{
		{"fieldManager wins", "mgr", "kubectl/v1.33", "mgr"},
		{"user agent prefix", "", "kubectl/v1.33.0 (linux/amd64) kubernetes/abc", "kubectl"},
		{"unprintable dropped", "", "kube\x01ctl/v1", "kubectl"},
		{"capped at 128 bytes", "", long, long[:128]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := managerOrUserAgent(tt.manager, tt.ua); got != tt.want {
				t.Fatalf("managerOrUserAgent(%q, %q) = %q, want %q", tt.manager, tt.ua, got, tt.want)
			}
		})
	}
}

// BenchmarkTrackCreate is what managedFields tracking adds to the create of a 20-container
// Deployment.
func BenchmarkTrackCreate(b *testing.B) {
	s := deploymentScope()
	d := deployment20()
	s.trackUpdate(nil, d.DeepCopy(), "warm")
	b.ResetTimer()
	for b.Loop() {
		s.trackUpdate(nil, d.DeepCopy(), "bench")
	}
}

// BenchmarkApplyChange is the field manager's share of an apply that changes the images of a
// 20-container Deployment it created.
func BenchmarkApplyChange(b *testing.B) {
	s := deploymentScope()
	fm, err := s.fieldManager()
	if err != nil {
		b.Fatal(err)
	}
	toU := func(d *appsv1.Deployment) runtime.Object {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			b.Fatal(err)
		}
		return &unstructured.Unstructured{Object: u}
	}
	live, err := fm.Apply(s.newLive(), toU(deployment20()), "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	changed := deployment20()
	for i := range changed.Spec.Template.Spec.Containers {
		changed.Spec.Template.Spec.Containers[i].Image = "app:2"
	}
	patch := toU(changed)
	b.ResetTimer()
	for b.Loop() {
		if _, err := fm.Apply(live, patch.DeepCopyObject(), "bench", false); err != nil {
			b.Fatal(err)
		}
	}
}

// customStorage is a custom kind without a definition (any content) for the field manager.
type customStorage struct{}

func (customStorage) New() runtime.Object { return &unstructured.Unstructured{} }
func (customStorage) Kind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
}

// TestCustomFieldManagerLeavesLiveAlone: the converter hands the field manager custom
// objects without copying them, so neither tracking an update nor an apply may change the
// live object it was given (the watch cache's, on a real update), and the apply's result
// shares nothing with it.
func TestCustomFieldManagerLeavesLiveAlone(t *testing.T) {
	s := &scope{names: &registry.Names{Group: "example.com", Version: "v1", Kind: "Thing", Plural: "things", Namespaced: true},
		storage: customStorage{}, kind: customStorage{}.Kind()}
	fm, err := s.fieldManager()
	if err != nil {
		t.Fatal(err)
	}
	thing := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "a", "namespace": "ns", "labels": map[string]any{"app": "a"}},
			"spec":     map[string]any{"replicas": replicas, "tags": []any{"x"}, "nested": map[string]any{"k": "v"}}}}
	}
	live := s.trackUpdate(nil, thing(1), "creator").(*unstructured.Unstructured)
	snapshot := live.DeepCopy()
	updated := s.trackUpdate(live, thing(2), "updater").(*unstructured.Unstructured)
	if !equality.Semantic.DeepEqual(live, snapshot) {
		t.Fatalf("tracking an update changed the live object:\n%v\nwas\n%v", live, snapshot)
	}
	if len(updated.GetManagedFields()) != 2 {
		t.Fatalf("managedFields after the update: %+v", updated.GetManagedFields())
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "a", "namespace": "ns"}, "spec": map[string]any{"replicas": int64(3)}}}
	applied, err := fm.Apply(live, patch, "applier", true)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(live, snapshot) {
		t.Fatalf("an apply changed the live object:\n%v\nwas\n%v", live, snapshot)
	}
	a := applied.(*unstructured.Unstructured)
	if r, _, _ := unstructured.NestedInt64(a.Object, "spec", "replicas"); r != 3 || len(a.GetManagedFields()) != 2 {
		t.Fatalf("applied: %v", a.Object)
	}
	_ = unstructured.SetNestedField(a.Object, "changed", "spec", "nested", "k")
	_ = unstructured.SetNestedField(a.Object, "changed", "metadata", "labels", "app")
	if !equality.Semantic.DeepEqual(live, snapshot) {
		t.Fatalf("the apply's result shares maps with the live object:\n%v", live)
	}
}
