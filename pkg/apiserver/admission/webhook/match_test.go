package webhook

import (
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRuleMatches(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	rule := func(ops []admissionregv1.OperationType, groups, versions, resources []string, scope admissionregv1.ScopeType) admissionregv1.RuleWithOperations {
		r := admissionregv1.RuleWithOperations{Operations: ops, Rule: admissionregv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}
		if scope != "" {
			r.Scope = &scope
		}
		return r
	}
	all := []string{"*"}
	create := []admissionregv1.OperationType{admissionregv1.Create}
	anyOp := []admissionregv1.OperationType{admissionregv1.OperationAll}
	for _, tc := range []struct {
		name string
		rule admissionregv1.RuleWithOperations
		a    admission.Attributes
		want bool
	}{
		{"exact", rule(create, []string{""}, []string{"v1"}, []string{"pods"}, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns"}, true},
		{"other operation", rule(create, all, all, all, ""), admission.Attributes{Operation: admission.Update, Resource: pods, Namespace: "ns"}, false},
		{"operation *", rule(anyOp, all, all, all, ""), admission.Attributes{Operation: admission.Delete, Resource: pods, Namespace: "ns"}, true},
		{"other group", rule(create, []string{""}, all, all, ""), admission.Attributes{Operation: admission.Create, Resource: deploys, Namespace: "ns"}, false},
		{"other version", rule(create, all, []string{"v2"}, all, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns"}, false},
		{"* is no subresource", rule(create, all, all, []string{"*"}, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding", Namespace: "ns"}, false},
		{"*/* is every subresource", rule(create, all, all, []string{"*/*"}, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding", Namespace: "ns"}, true},
		{"pods/* is pods' subresources", rule(create, all, all, []string{"pods/*"}, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "eviction", Namespace: "ns"}, true},
		{"pods/* is not pods", rule(create, all, all, []string{"pods/*"}, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns"}, false},
		{"*/status", rule(create, all, all, []string{"*/status"}, ""), admission.Attributes{Operation: admission.Create, Resource: deploys, Subresource: "status", Namespace: "ns"}, true},
		{"pods/status not binding", rule(create, all, all, []string{"pods/status"}, ""), admission.Attributes{Operation: admission.Create, Resource: pods, Subresource: "binding", Namespace: "ns"}, false},
		{"Namespaced scope, namespaced", rule(create, all, all, all, admissionregv1.NamespacedScope), admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns"}, true},
		{"Namespaced scope, cluster", rule(create, all, all, all, admissionregv1.NamespacedScope), admission.Attributes{Operation: admission.Create, Resource: nodes}, false},
		{"Cluster scope, namespace object", rule(create, all, all, all, admissionregv1.ClusterScope), admission.Attributes{Operation: admission.Create, Resource: namespaces, Namespace: "ns"}, true},
		{"Cluster scope, namespaced", rule(create, all, all, all, admissionregv1.ClusterScope), admission.Attributes{Operation: admission.Create, Resource: pods, Namespace: "ns"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleMatches(tc.rule, &tc.a); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObjectSelector(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}}
	for _, tc := range []struct {
		name     string
		sel      *metav1.LabelSelector
		obj, old *corev1.Pod
		want     bool
	}{
		{"nil selector", nil, db, nil, true},
		{"new matches", sel, web, nil, true},
		{"old matches", sel, db, web, true},
		{"neither", sel, db, db, false},
		{"delete: old only", sel, nil, web, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission.Attributes{}
			if tc.obj != nil {
				a.Object = tc.obj
			}
			if tc.old != nil {
				a.OldObject = tc.old
			}
			got, err := ObjectSelectorMatches(tc.sel, a)
			if err != nil || got != tc.want {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func TestToStatusErr(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       *metav1.Status
		wantCode int32
		wantMsg  string
	}{
		{"nil", nil, 400, `admission webhook "w" denied the request without explanation`},
		{"message and code", &metav1.Status{Code: 406, Message: "nope"}, 406, `admission webhook "w" denied the request: nope`},
		{"reason only, low code", &metav1.Status{Code: 200, Reason: "Because"}, 400, `admission webhook "w" denied the request: Because`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := toStatusErr("w", tc.in)
			st := err.(interface{ Status() metav1.Status }).Status()
			if st.Code != tc.wantCode || st.Message != tc.wantMsg || st.Status != metav1.StatusFailure {
				t.Fatalf("got %d %q %q", st.Code, st.Message, st.Status)
			}
		})
	}
}

// TestDryRunSideEffects: a webhook with side effects refuses a dry run with upstream's 400,
// before anything is sent.
func TestDryRunSideEffects(t *testing.T) {
	d := New(Config{})
	for _, se := range []admissionregv1.SideEffectClass{admissionregv1.SideEffectClassUnknown, admissionregv1.SideEffectClassSome} {
		h := &hook{name: "w", sideEffects: se, reviewVersions: []string{"v1"}}
		_, _, err := d.call(t.Context(), h, &admission.Attributes{Operation: admission.Create, DryRun: true}, nil)
		st, ok := err.(interface{ Status() metav1.Status })
		if !ok || st.Status().Code != 400 || st.Status().Message != `admission webhook "w" does not support dry run` {
			t.Fatalf("%s: %v, want 400 does not support dry run", se, err)
		}
		// Whatever the failure policy says: Ignore does not let it through.
		h.failurePolicy = admissionregv1.Ignore
		if err := d.failed(t.Context(), h, err, "validating", 0, 0); err == nil {
			t.Fatalf("%s: failurePolicy Ignore let a dry run through a webhook with side effects", se)
		}
	}
}
