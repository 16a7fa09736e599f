package endpoints

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
