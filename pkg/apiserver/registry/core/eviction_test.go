package core_test

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// pdbResource is where the PodDisruptionBudgets eviction respects are served.
var pdbResource = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}

// TestEvictionRespectsBudgets: a running, ready pod is evicted only while its budget allows a
// disruption; each eviction takes one (429 after), a terminal pod ignores the budget.
func TestEvictionRespectsBudgets(t *testing.T) {
	r := controlplane.New(etcdtest.Client(t), controlplane.Config{})
	pdbs := r.Resource(pdbResource).Store
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.Wait() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pods := r.Resource(schema.GroupResource{Resource: "pods"})
	evict := pods.Subresources["eviction"].(registry.Creater)

	running := func(name string, phase corev1.PodPhase) {
		t.Helper()
		_, err := pods.Store.Create(ctx, "default", "", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = pods.Subresources["status"].(registry.Updater).Update(ctx, "default", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			p.Status.Phase = phase
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			return p, nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	running("a", corev1.PodRunning)
	running("b", corev1.PodRunning)
	running("done", corev1.PodSucceeded)

	_, err := pdbs.Create(ctx, "default", "", &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setAllowed := func(n int32) {
		t.Helper()
		_, _, err := r.Resource(pdbResource).Subresources["status"].(registry.Updater).Update(ctx, "default", "web", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			p := cur.(*policyv1.PodDisruptionBudget)
			p.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: n, ObservedGeneration: p.Generation, CurrentHealthy: 2, DesiredHealthy: 2 - n, ExpectedPods: 2}
			return p, nil
		}, &metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	eviction := func(name string) error {
		_, err := evict.Create(ctx, "default", name, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name}}, &metav1.CreateOptions{})
		return err
	}
	exists := func(name string) bool {
		_, err := pods.Store.Get(ctx, "default", name, &metav1.GetOptions{})
		return err == nil
	}

	setAllowed(0)
	err = eviction("a")
	if !apierrors.IsTooManyRequests(err) || !exists("a") {
		t.Fatalf("eviction with no disruption allowed: %v (pod kept: %v), want 429", err, exists("a"))
	}
	if st := err.(apierrors.APIStatus).Status(); len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause {
		t.Fatalf("429 causes %+v", st.Details)
	}
	if err := eviction("done"); err != nil || exists("done") {
		t.Fatalf("a terminal pod ignores the budget: %v", err)
	}

	setAllowed(1)
	if err := eviction("a"); err != nil || exists("a") {
		t.Fatalf("eviction with one disruption allowed: %v", err)
	}
	obj, err := pdbs.Get(ctx, "default", "web", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb := obj.(*policyv1.PodDisruptionBudget)
	if _, ok := pdb.Status.DisruptedPods["a"]; pdb.Status.DisruptionsAllowed != 0 || !ok {
		t.Fatalf("budget after eviction: %+v", pdb.Status)
	}
	if err := eviction("b"); !apierrors.IsTooManyRequests(err) || !exists("b") {
		t.Fatalf("second eviction: %v, want 429", err)
	}
}
