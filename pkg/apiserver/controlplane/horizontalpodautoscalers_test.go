package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// hpaStores returns the autoscaling/v2 and autoscaling/v1 stores of horizontalpodautoscalers.
func hpaStores(t *testing.T, r *controlplane.Registry) (v2, v1 *registry.Store) {
	t.Helper()
	for _, res := range r.Resources {
		n := res.Store.Names()
		if n.Group == "autoscaling" && n.Plural == "horizontalpodautoscalers" {
			switch n.Version {
			case "v2":
				v2 = res.Store
			case "v1":
				v1 = res.Store
			}
		}
	}
	if v1 == nil || v2 == nil {
		t.Fatal("horizontalpodautoscalers is not served at both autoscaling/v1 and v2")
	}
	return v2, v1
}

// TestHPAVersions: one object, stored once, read and written at autoscaling/v1 and v2 (v1's
// CPU target is v2's CPU utilization metric; v2-only fields survive a v1 round trip).
func TestHPAVersions(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	v2, v1 := hpaStores(t, r)
	ref := autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}

	w, err := v1.Watch(ctx, "default", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// v1 in, v2 out.
	in := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: ref, MaxReplicas: 4, TargetCPUUtilizationPercentage: ptr[int32](50)}}
	created, err := v1.Create(ctx, "default", "", in, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := created.(*autoscalingv1.HorizontalPodAutoscaler); *c.Spec.MinReplicas != 1 || *c.Spec.TargetCPUUtilizationPercentage != 50 || c.APIVersion != "autoscaling/v1" {
		t.Fatalf("created at v1: %s", asJSON(t, c))
	}
	got, err := v2.Get(ctx, "default", "a", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h2 := got.(*autoscalingv2.HorizontalPodAutoscaler)
	if len(h2.Spec.Metrics) != 1 || h2.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *h2.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 {
		t.Fatalf("v1 object read at v2: %s", asJSON(t, h2.Spec))
	}
	select {
	case ev := <-w.ResultChan():
		if h, ok := ev.Object.(*autoscalingv1.HorizontalPodAutoscaler); ev.Type != watch.Added || !ok || h.Name != "a" {
			t.Fatalf("v1 watch event %s %T", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no v1 watch event for a created object")
	}

	// v2 in with a memory metric and behavior: v1 sees the CPU target, the rest in annotations,
	// and a v1 update keeps them.
	b := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(ref), MaxReplicas: 6,
		Metrics: []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(resource.MustParse("100Mi"))}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](60)}}},
		},
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](30)}},
	}}
	if _, err := v2.Create(ctx, "default", "", b, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = v1.Get(ctx, "default", "b", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h1 := got.(*autoscalingv1.HorizontalPodAutoscaler)
	if *h1.Spec.TargetCPUUtilizationPercentage != 60 || !strings.Contains(h1.Annotations["autoscaling.alpha.kubernetes.io/metrics"], "memory") ||
		!strings.Contains(h1.Annotations["autoscaling.alpha.kubernetes.io/behavior"], `"stabilizationWindowSeconds":30`) {
		t.Fatalf("v2 object read at v1: %s", asJSON(t, h1))
	}
	if _, _, err := v1.Update(ctx, "default", "b", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		h := cur.(*autoscalingv1.HorizontalPodAutoscaler)
		h.Spec.MaxReplicas = 8
		h.Spec.TargetCPUUtilizationPercentage = ptr[int32](70)
		return h, nil
	}, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = v2.Get(ctx, "default", "b", &metav1.GetOptions{})
	h2 = got.(*autoscalingv2.HorizontalPodAutoscaler)
	if h2.Spec.MaxReplicas != 8 || len(h2.Spec.Metrics) != 2 || h2.Spec.Metrics[0].Resource.Name != corev1.ResourceMemory ||
		*h2.Spec.Metrics[1].Resource.Target.AverageUtilization != 70 || *h2.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 30 || len(h2.Annotations) != 0 {
		t.Fatalf("after a v1 update, v2 reads: %s", asJSON(t, h2))
	}
	// The scale-down defaults of upstream's behavior defaulting.
	if p := h2.Spec.Behavior.ScaleDown.Policies; len(p) != 1 || p[0].Type != autoscalingv2.PercentScalingPolicy || p[0].Value != 100 || p[0].PeriodSeconds != 15 {
		t.Fatalf("behavior defaults: %s", asJSON(t, h2.Spec.Behavior))
	}

	// Lists at v1, validation at v1 (on the v2 object), deletion through v1.
	list, err := v1.List(ctx, "default", &metav1.ListOptions{LabelSelector: ""})
	if err != nil {
		t.Fatal(err)
	}
	if l := list.(*autoscalingv1.HorizontalPodAutoscalerList); len(l.Items) != 2 || l.ResourceVersion == "" {
		t.Fatalf("v1 list: %d items, rv %q", len(l.Items), l.ResourceVersion)
	}
	bad := in.DeepCopy()
	bad.Name, bad.Spec.MaxReplicas = "bad", 0
	if _, err := v1.Create(ctx, "default", "", bad, &metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(causeMessages(err), "spec.maxReplicas: ") {
		t.Fatalf("invalid v1 object: %v", err)
	}
	if _, _, err := v1.Delete(ctx, "default", "a", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Get(ctx, "default", "a", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted at v1, read at v2: %v", err)
	}
}
