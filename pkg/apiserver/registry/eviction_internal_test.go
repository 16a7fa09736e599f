package registry

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// withPDBs serves policy/v1 poddisruptionbudgets in r as a bare kind (no rules of its own)
// unless the registry already does, so that eviction can be tested against budgets.
func withPDBs(r *Registry) *Store {
	if res := r.byGR[pdbResource]; res != nil {
		return res.Store
	}
	k := &Kind{
		Names: Names{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", ListKind: "PodDisruptionBudgetList",
			Plural: "poddisruptionbudgets", Singular: "poddisruptionbudget", ShortNames: []string{"pdb"}, Namespaced: true},
		New:     func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Status:  true,
	}
	s := &Store{kind: k, storage: storage.New(r.client, storage.Config{Prefix: r.cfg.Prefix, NewFunc: k.New}), namespaces: r.namespaceAccepts}
	r.byGR[pdbResource] = &Resource{Store: s, Subresources: map[string]Storage{"status": &StatusStore{store: s}}}
	return s
}

// TestEvictionRespectsBudgets: a running, ready pod is evicted only while its budget allows a
// disruption; each eviction takes one (429 after), a terminal pod ignores the budget.
func TestEvictionRespectsBudgets(t *testing.T) {
	r := New(etcdtest.Client(t), Config{})
	pdbs := withPDBs(r) // before Start: the registry's maps are not written while it serves
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.Wait() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pods := r.byGR[schema.GroupResource{Resource: "pods"}]
	evict := pods.Subresources["eviction"].(Creater)

	running := func(name string, phase corev1.PodPhase) {
		t.Helper()
		_, err := pods.Store.Create(ctx, "default", "", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = pods.Subresources["status"].(Updater).Update(ctx, "default", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
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
		_, _, err := r.byGR[pdbResource].Subresources["status"].(Updater).Update(ctx, "default", "web", func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
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
