package plugins

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/webhook"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkDefaultChain is what the default chain costs a write when no webhook is
// configured: a ConfigMap create (no plugin applies) and a Pod create (ServiceAccount,
// LimitRanger, Priority, PodSecurity look at it; their caches are empty here, so the
// account is read through get, and ResourceQuota finds no quota in the namespace).
func BenchmarkDefaultChain(b *testing.B) {
	d := webhook.New(webhook.Config{})
	ps, err := NewPodSecurity(nil)
	if err != nil {
		b.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}
	chain := admission.Chain{
		NewLimitRanger(nil),
		NewServiceAccount(nil, func(ctx context.Context, ns, name string) (runtime.Object, error) { return sa, nil }),
		ps, NewPriority(nil), NewDefaultStorageClass(nil), d.Mutating(), d.Validating(),
		NewResourceQuota(nil, nil, nil),
	}
	for _, tc := range []struct {
		name string
		res  string
		obj  func() runtime.Object
	}{
		{"configmap", "configmaps", func() runtime.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
		}},
		{"pod", "pods", func() runtime.Object {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				a := &admission.Attributes{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: tc.res}, Namespace: "ns", Name: "x", Object: tc.obj()}
				if err := chain.Admit(b.Context(), a); err != nil {
					b.Fatal(err)
				}
				if err := chain.Validate(b.Context(), a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
