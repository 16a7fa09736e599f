package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const equivalentGadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.equiv.hacp.test
spec:
  group: equiv.hacp.test
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// TestAdmissionWebhookEquivalent: a webhook registered for one version of a resource is called
// (matchPolicy Equivalent, the default) for a request to another served version, with the
// object converted to the version it registered for and its patch converted back; with
// matchPolicy Exact it is not. Built-in (autoscaling/v1 and v2 HorizontalPodAutoscalers) and
// custom resource (two versions, conversion None).
func TestAdmissionWebhookEquivalent(t *testing.T) {
	s := servertest.New(t, nil)
	hook := newHookServer(t)
	rc := servertest.RestConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	ctx := context.Background()
	createCRD(t, dyn, equivalentGadgetCRD)
	gadgetsV2 := schema.GroupVersionResource{Group: "equiv.hacp.test", Version: "v2", Resource: "gadgets"}
	waitServed(t, dyn, gadgetsV2)

	rules := []admissionregv1.RuleWithOperations{
		{Operations: []admissionregv1.OperationType{admissionregv1.Create}, Rule: admissionregv1.Rule{
			APIGroups: []string{"autoscaling"}, APIVersions: []string{"v1"}, Resources: []string{"horizontalpodautoscalers"}}},
		{Operations: []admissionregv1.OperationType{admissionregv1.Create}, Rule: admissionregv1.Rule{
			APIGroups: []string{"equiv.hacp.test"}, APIVersions: []string{"v1"}, Resources: []string{"gadgets"}}},
	}
	mutating := &admissionregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "equiv"},
		Webhooks: []admissionregv1.MutatingWebhook{
			{Name: "equivalent.hacp.test", ClientConfig: admissionregv1.WebhookClientConfig{URL: ptr.To(hook.srv.URL + "/mutate"), CABundle: hook.caPEM},
				Rules: rules, ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "equivalent"}},
				SideEffects: ptr.To(admissionregv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}},
			{Name: "exact.hacp.test", ClientConfig: admissionregv1.WebhookClientConfig{URL: ptr.To(hook.srv.URL + "/mutate"), CABundle: hook.caPEM},
				Rules: rules, MatchPolicy: ptr.To(admissionregv1.Exact), ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "exact"}},
				SideEffects: ptr.To(admissionregv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}},
		}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hpa := func(name, policy string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"policy": policy}},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
				MinReplicas: ptr.To(int32(1)), MaxReplicas: 3}}
	}
	probe := 0
	eventuallyOK(t, "webhook active", func() error {
		probe++
		out, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", probe), Labels: map[string]string{"policy": "equivalent"}},
			Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 3},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Labels["mutated"] != "yes" {
			return fmt.Errorf("not mutated yet")
		}
		return nil
	})

	t.Run("HorizontalPodAutoscaler v2 to a v1 webhook", func(t *testing.T) {
		out, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, hpa("eq", "equivalent"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Labels["mutated"] != "yes" || out.Spec.ScaleTargetRef.Name != "web" || out.Spec.MaxReplicas != 3 {
			t.Fatalf("created %+v, want mutated=yes and the spec kept", out)
		}
		hook.mu.Lock()
		got := hook.kinds["eq"]
		hook.mu.Unlock()
		if want := "autoscaling/v1.HorizontalPodAutoscaler / autoscaling/v2"; got != want {
			t.Fatalf("webhook saw %q, want %q", got, want)
		}
		out, err = cs.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, hpa("ex", "exact"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Labels["mutated"] != "" || hook.count("/mutate", admissionv1.Create, "ex") != 0 {
			t.Fatalf("matchPolicy Exact: webhook called (labels %v)", out.Labels)
		}
	})

	t.Run("custom resource v2 to a v1 webhook", func(t *testing.T) {
		for _, policy := range []string{"equivalent", "exact"} {
			name := "g-" + policy
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "equiv.hacp.test/v2", "kind": "Gadget",
				"metadata": map[string]any{"name": name, "labels": map[string]any{"policy": policy}}, "spec": map[string]any{"size": int64(2)}}}
			out, err := dyn.Resource(gadgetsV2).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mutated := out.GetLabels()["mutated"] == "yes"
			if mutated != (policy == "equivalent") || out.GetAPIVersion() != "equiv.hacp.test/v2" {
				t.Fatalf("%s: created %v, want mutated %v at v2", policy, out.Object, policy == "equivalent")
			}
		}
		hook.mu.Lock()
		got := hook.kinds["g-equivalent"]
		hook.mu.Unlock()
		if want := "equiv.hacp.test/v1.Gadget / equiv.hacp.test/v2"; got != want {
			t.Fatalf("webhook saw %q, want %q", got, want)
		}
	})
}
