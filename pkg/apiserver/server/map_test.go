package server_test

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// mapOnConfigMaps is a MutatingAdmissionPolicy on ConfigMap creates and updates.
func mapOnConfigMaps(name string, pk *admissionregv1.ParamKind, fp admissionregv1.FailurePolicyType, ms ...admissionregv1.Mutation) *admissionregv1.MutatingAdmissionPolicy {
	return &admissionregv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.MutatingAdmissionPolicySpec{
			ParamKind: pk,
			MatchConstraints: &admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregv1.RuleWithOperations{
					Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
					Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Mutations:          ms,
			FailurePolicy:      ptr.To(fp),
			ReinvocationPolicy: admissionregv1.NeverReinvocationPolicy,
		}}
}

// mapBindingIn binds the policy to the namespaces labelled env=env.
func mapBindingIn(name, env string, ref *admissionregv1.ParamRef) *admissionregv1.MutatingAdmissionPolicyBinding {
	return &admissionregv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: ref,
			MatchResources: &admissionregv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}}
}

// TestMutatingAdmissionPolicy: through client-go, an ApplyConfiguration policy adds a
// label, a JSONPatch policy an annotation and a param-driven policy the param's team, to
// the ConfigMaps created in the bound namespace (dry runs too), and to nothing elsewhere; a
// failurePolicy Fail policy whose expression fails refuses with upstream's 403 Invalid.
func TestMutatingAdmissionPolicy(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	for ns, env := range map[string]string{"bound": "bound", "other": "other", "failing": "failing"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"env": env}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("bound").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Data: map[string]string{"team": "blue"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmKind := &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	policies := []*admissionregv1.MutatingAdmissionPolicy{
		mapOnConfigMaps("apply-label", nil, admissionregv1.Fail, admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"mutated-by": "apply"}}}`}}),
		mapOnConfigMaps("json-annotation", nil, admissionregv1.Fail, admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/metadata/annotations", value: {"mutated-by": "json"}}]`}}),
		mapOnConfigMaps("param-team", cmKind, admissionregv1.Fail, admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"team": params.data.team}}}`}}),
		mapOnConfigMaps("broken", nil, admissionregv1.Fail, admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"x": object.data["missing"]}}}`}}),
	}
	bindings := []*admissionregv1.MutatingAdmissionPolicyBinding{
		mapBindingIn("apply-label", "bound", nil),
		mapBindingIn("json-annotation", "bound", nil),
		mapBindingIn("param-team", "bound", &admissionregv1.ParamRef{Name: "team", ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}),
		mapBindingIn("broken", "failing", nil),
	}
	for i := range policies {
		if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policies[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, bindings[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"own": "1"}}, Data: map[string]string{"a": "1"}}
	}
	mutated := func(c *corev1.ConfigMap) bool {
		return c.Labels["mutated-by"] == "apply" && c.Labels["team"] == "blue" && c.Labels["own"] == "1" && c.Annotations["mutated-by"] == "json"
	}
	// The policies take effect once the server's informers have them: a server-side dry run
	// (mutated too) shows when.
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(t, "the policies mutate a dry run", func() bool {
		got, err := cs.CoreV1().ConfigMaps("bound").Create(ctx, cm("probe"), dry)
		return err == nil && mutated(got)
	})
	got, err := cs.CoreV1().ConfigMaps("bound").Create(ctx, cm("c"), metav1.CreateOptions{})
	if err != nil || !mutated(got) {
		t.Fatalf("bound: %v %v %v", got.Labels, got.Annotations, err)
	}
	if got, err = cs.CoreV1().ConfigMaps("bound").Get(ctx, "c", metav1.GetOptions{}); err != nil || !mutated(got) {
		t.Fatalf("bound, stored: %v %v %v", got.Labels, got.Annotations, err)
	}
	if got, err = cs.CoreV1().ConfigMaps("other").Create(ctx, cm("c"), metav1.CreateOptions{}); err != nil || len(got.Labels) != 1 || len(got.Annotations) != 0 {
		t.Fatalf("other: %v %v %v", got.Labels, got.Annotations, err)
	}

	const want = `policy 'broken' with binding 'broken' denied request: expression 'Object{metadata: Object.metadata{labels: {"x": object.data["missing"]}}}' resulted in error: no such key: missing`
	eventually(t, "the failing policy refuses", func() bool {
		_, err := cs.CoreV1().ConfigMaps("failing").Create(ctx, cm("probe"), dry)
		return err != nil
	})
	_, err = cs.CoreV1().ConfigMaps("failing").Create(ctx, cm("c"), metav1.CreateOptions{})
	var se apierrors.APIStatus
	ok := false
	if se, ok = err.(apierrors.APIStatus); !ok {
		t.Fatalf("failing: got %v", err)
	}
	st := se.Status()
	if st.Code != 403 || st.Reason != metav1.StatusReasonInvalid || st.Message != want || st.Details == nil || st.Details.Name != "c" ||
		st.Details.Kind != "configmaps" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != want {
		t.Fatalf("failing: got %+v", st)
	}
}
