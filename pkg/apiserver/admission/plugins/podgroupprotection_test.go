package plugins

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPodGroupProtection follows upstream's podgroupprotection TestAdmit: with
// GenericWorkload on a new PodGroup gets the finalizer once; with it off (1.37's default)
// nothing changes.
func TestPodGroupProtection(t *testing.T) {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "my-podgroup", Namespace: "default"}}
	withFinalizer := pg.DeepCopy()
	withFinalizer.Finalizers = []string{PodGroupProtectionFinalizer}
	alpha := &schedulingv1alpha3.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "my-podgroup", Namespace: "default", Finalizers: []string{"example.com/keep"}}}
	alphaWant := alpha.DeepCopy()
	alphaWant.Finalizers = append(alphaWant.Finalizers, PodGroupProtectionFinalizer)
	podgroups := schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")
	for _, tc := range []struct {
		name      string
		enabled   bool
		resource  schema.GroupVersionResource
		sub       string
		obj, want runtime.Object
	}{
		{"enabled adds the finalizer", true, podgroups, "", pg, withFinalizer},
		{"finalizer already there", true, podgroups, "", withFinalizer, withFinalizer},
		{"v1alpha3 keeps other finalizers", true, schedulingv1alpha3.SchemeGroupVersion.WithResource("podgroups"), "", alpha, alphaWant},
		{"status subresource untouched", true, podgroups, "status", pg, pg},
		{"other resource untouched", true, schedulingv1beta1.SchemeGroupVersion.WithResource("workloads"), "", pg, pg},
		{"disabled: nothing", false, podgroups, "", pg, pg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj.DeepCopyObject()
			a := &admission.Attributes{Operation: admission.Create, Resource: tc.resource, Subresource: tc.sub, Namespace: "default", Name: "foo", Object: obj}
			if err := NewPodGroupProtection(tc.enabled).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(obj, tc.want) {
				t.Fatalf("got %+v, want %+v", obj, tc.want)
			}
		})
	}
	if p := NewPodGroupProtection(true); p.Handles(admission.Update) || !p.Handles(admission.Create) {
		t.Fatal("the plugin handles creates only, as upstream's")
	}
}
