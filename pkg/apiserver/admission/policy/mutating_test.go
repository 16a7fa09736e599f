package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/policy"
	"github.com/hacp/hacp/pkg/apiserver/openapi"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// mutEnv is the validating env's registry with the mutating plugin on its informers.
type mutEnv struct {
	*env
	m *policy.Mutating
}

func newMutEnv(t *testing.T) *mutEnv {
	t.Helper()
	e := newEnv(t)
	m := policy.NewMutating(policy.Config{
		Informers: e.reg.Informers(),
		Scheme:    registry.Scheme,
		ParamResource: func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, bool) {
			if gvk == corev1.SchemeGroupVersion.WithKind("ConfigMap") {
				return corev1.SchemeGroupVersion.WithResource("configmaps"), true, true
			}
			return schema.GroupVersionResource{}, false, false
		},
		GetNamespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			obj, err := e.reg.Resource(schema.GroupResource{Resource: "namespaces"}).Store.Get(ctx, "", name, &metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return obj.(*corev1.Namespace), nil
		},
		TypeConverter: func(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
			obj, err := registry.Scheme.New(gvk)
			if err != nil {
				return nil, err
			}
			models, err := openapi.Models(obj, gvk, nil)
			if err != nil {
				return nil, err
			}
			return managedfields.NewTypeConverter(models, false)
		},
	})
	m.Start(e.ctx)
	return &mutEnv{env: e, m: m}
}

// bindMutating creates the policy and binding and waits until they are enforced; both are
// deleted when the test ends.
func (e *mutEnv) bindMutating(t *testing.T, pol *admissionregv1.MutatingAdmissionPolicy, b *admissionregv1.MutatingAdmissionPolicyBinding) {
	t.Helper()
	e.create("mutatingadmissionpolicies", "", pol)
	e.create("mutatingadmissionpolicybindings", "", b)
	e.waitFor(func() bool { return e.m.Enforced(pol.Name, "", b.Name) })
	t.Cleanup(func() {
		_, _, _ = e.store("mutatingadmissionpolicybindings").Delete(e.ctx, "", b.Name, &metav1.DeleteOptions{})
		_, _, _ = e.store("mutatingadmissionpolicies").Delete(e.ctx, "", pol.Name, &metav1.DeleteOptions{})
		e.waitFor(func() bool { return !e.m.Enforced(pol.Name, "", b.Name) })
	})
}

func applyConfig(expr string) admissionregv1.Mutation {
	return admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregv1.ApplyConfiguration{Expression: expr}}
}

func jsonPatch(expr string) admissionregv1.Mutation {
	return admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeJSONPatch, JSONPatch: &admissionregv1.JSONPatch{Expression: expr}}
}

// mapPolicy is a policy on ConfigMap creates and updates with the mutations.
func mapPolicy(name string, ms ...admissionregv1.Mutation) *admissionregv1.MutatingAdmissionPolicy {
	return &admissionregv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   &admissionregv1.MatchResources{ResourceRules: configMapRules()},
			Mutations:          ms,
			ReinvocationPolicy: admissionregv1.NeverReinvocationPolicy,
		}}
}

func mapBinding(name, policyName string, mr *admissionregv1.MatchResources) *admissionregv1.MutatingAdmissionPolicyBinding {
	return &admissionregv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policyName, MatchResources: mr}}
}

const addLabelApply = `Object{metadata: Object.metadata{labels: {"mutated": "apply"}}}`

// admitCM admits a ConfigMap create in ns and returns the object as mutated.
func (e *mutEnv) admitCM(t *testing.T, ns string, labels, data map[string]string) (*corev1.ConfigMap, error) {
	t.Helper()
	a := cmCreate(ns, "x", labels, data)
	err := e.m.Admit(e.ctx, a)
	return a.Object.(*corev1.ConfigMap), err
}

// TestMutateBothPatchTypes: an ApplyConfiguration policy bound to env=prod adds a label
// (merged with the object's own), a JSONPatch policy bound everywhere adds an annotation;
// a ConfigMap in dev gets only the annotation.
func TestMutateBothPatchTypes(t *testing.T) {
	e := newMutEnv(t)
	e.bindMutating(t, mapPolicy("a-apply", applyConfig(addLabelApply)), mapBinding("a-apply", "a-apply", prodOnly()))
	e.bindMutating(t, mapPolicy("b-json", jsonPatch(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"mutated": "json"}}]`)),
		mapBinding("b-json", "b-json", nil))
	cm, err := e.admitCM(t, "prod", map[string]string{"own": "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["mutated"] != "apply" || cm.Labels["own"] != "1" || cm.Annotations["mutated"] != "json" {
		t.Fatalf("prod: labels %v annotations %v", cm.Labels, cm.Annotations)
	}
	cm, err = e.admitCM(t, "dev", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Labels["mutated"]; ok || cm.Annotations["mutated"] != "json" {
		t.Fatalf("dev: labels %v annotations %v", cm.Labels, cm.Annotations)
	}
	// Deletes have no object: the plugin does not handle them.
	if e.m.Handles(admission.Delete) || !e.m.Handles(admission.Update) {
		t.Fatal("handles delete, or not update")
	}
}

// TestMutateConditionsVariablesParams: matchConditions gate the mutation, variables and
// params feed it; a selector applies every selected param in turn; parameterNotFoundAction
// Deny refuses as upstream.
func TestMutateConditionsVariablesParams(t *testing.T) {
	e := newMutEnv(t)
	e.create("configmaps", "prod", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"param": "yes"}}, Data: map[string]string{"team": "blue"}})
	e.create("configmaps", "prod", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "zone", Labels: map[string]string{"param": "yes"}}, Data: map[string]string{"zone": "eu"}})
	pol := mapPolicy("p", applyConfig(`Object{metadata: Object.metadata{labels: params.data}}`),
		jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/size", value: variables.size}]`))
	pol.Spec.ParamKind = &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	pol.Spec.Variables = []admissionregv1.Variable{{Name: "size", Expression: `string(size(object.data))`}}
	pol.Spec.MatchConditions = []admissionregv1.MatchCondition{{Name: "not-skipped", Expression: `!has(object.metadata.labels) || !("skip" in object.metadata.labels)`}}
	b := mapBinding("b", "p", nil)
	b.Spec.ParamRef = &admissionregv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}},
		ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}
	e.bindMutating(t, pol, b)

	cm, err := e.admitCM(t, "prod", nil, map[string]string{"a": "1", "b": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["team"] != "blue" || cm.Labels["zone"] != "eu" || cm.Labels["size"] != "2" {
		t.Fatalf("labels %v", cm.Labels)
	}
	cm, err = e.admitCM(t, "prod", map[string]string{"skip": "1"}, nil)
	if err != nil || len(cm.Labels) != 1 {
		t.Fatalf("skipped: labels %v, err %v", cm.Labels, err)
	}
	// dev has no params: Deny refuses with upstream's 403.
	_, err = e.admitCM(t, "dev", nil, nil)
	wantMutStatus(t, err, 403, metav1.StatusReasonForbidden,
		"policy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
}

// wantMutStatus checks err is upstream's mutating-policy refusal: the code, reason and the
// message, which is also the one cause.
func wantMutStatus(t *testing.T, err error, code int32, reason metav1.StatusReason, msg string) {
	t.Helper()
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("got %v (%T), want a %d Status", err, err, code)
	}
	st := se.Status()
	if st.Code != code || st.Reason != reason || st.Message != msg {
		t.Fatalf("got %d %s %q,\nwant %d %s %q", st.Code, st.Reason, st.Message, code, reason, msg)
	}
	if st.Details == nil || st.Details.Name != "x" || st.Details.Kind != "configmaps" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != msg {
		t.Fatalf("details %+v", st.Details)
	}
}

// TestMutateFailurePolicy: a runtime error refuses under Fail with upstream's 403 Invalid
// and message, and is passed over under Ignore (the policy's next mutation still applies).
// (A stored policy that does not compile: TestStoredMutatingPoliciesThatDoNotCompile.)
func TestMutateFailurePolicy(t *testing.T) {
	const expr = `Object{metadata: Object.metadata{labels: {"x": object.data["missing"]}}}`
	e := newMutEnv(t)
	pol := mapPolicy("p", applyConfig(expr))
	pol.Spec.FailurePolicy = ptr.To(admissionregv1.Fail)
	pol.Spec.MatchConstraints.NamespaceSelector = prodOnly().NamespaceSelector
	e.bindMutating(t, pol, mapBinding("b", "p", nil))
	_, err := e.admitCM(t, "prod", nil, map[string]string{"a": "1"})
	wantMutStatus(t, err, 403, metav1.StatusReasonInvalid, "policy 'p' with binding 'b' denied request: expression '"+expr+"' resulted in error: no such key: missing")

	ign := mapPolicy("q", applyConfig(expr), applyConfig(addLabelApply))
	ign.Spec.FailurePolicy = ptr.To(admissionregv1.Ignore)
	ign.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
	e.bindMutating(t, ign, mapBinding("c", "q", nil))
	cm, err := e.admitCM(t, "dev", nil, nil)
	if err != nil || cm.Labels["mutated"] != "apply" || cm.Labels["x"] != "" {
		t.Fatalf("Ignore: labels %v, err %v", cm.Labels, err)
	}
}

// TestMutateReinvocation: a policy with reinvocationPolicy IfNeeded runs again when a
// mutation happened in the first pass (its counter ends at 2); with Never it runs once.
func TestMutateReinvocation(t *testing.T) {
	counter := jsonPatch(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"count": string(
		has(object.metadata.annotations) && "count" in object.metadata.annotations ? int(object.metadata.annotations["count"]) + 1 : 1)}}]`)
	for _, tc := range []struct {
		policy admissionregv1.ReinvocationPolicyType
		want   string
	}{{admissionregv1.IfNeededReinvocationPolicy, "2"}, {admissionregv1.NeverReinvocationPolicy, "1"}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newMutEnv(t)
			pol := mapPolicy("a-count", counter)
			pol.Spec.ReinvocationPolicy = tc.policy
			e.bindMutating(t, pol, mapBinding("a-count", "a-count", nil))
			e.bindMutating(t, mapPolicy("b-label", applyConfig(addLabelApply)), mapBinding("b-label", "b-label", nil))
			cm, err := e.admitCM(t, "prod", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if cm.Annotations["count"] != tc.want || cm.Labels["mutated"] != "apply" {
				t.Fatalf("annotations %v labels %v, want count %s", cm.Annotations, cm.Labels, tc.want)
			}
		})
	}
}

// TestMutatePatchErrors: a JSONPatch that does not apply is upstream's error, and one
// whose test operation fails leaves the object as it was.
func TestMutatePatchErrors(t *testing.T) {
	e := newMutEnv(t)
	pol := mapPolicy("p", jsonPatch(`[JSONPatch{op: "add", path: "/spec/x/y", value: "x"}]`))
	pol.Spec.MatchConstraints.NamespaceSelector = prodOnly().NamespaceSelector
	e.bindMutating(t, pol, mapBinding("b", "p", nil))
	_, err := e.admitCM(t, "prod", nil, map[string]string{"a": "1"})
	if err == nil || !strings.HasPrefix(err.Error(), "policy 'p' with binding 'b' denied request: JSON Patch: ") || !apierrors.IsInvalid(err) {
		t.Fatalf("got %v", err)
	}
	pol2 := mapPolicy("q", jsonPatch(`[JSONPatch{op: "test", path: "/data/a", value: "nope"}, JSONPatch{op: "add", path: "/data/b", value: "2"}]`))
	pol2.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
	e.bindMutating(t, pol2, mapBinding("c", "q", nil))
	cm, err := e.admitCM(t, "dev", nil, map[string]string{"a": "1"})
	if err != nil || len(cm.Data) != 1 {
		t.Fatalf("data %v err %v", cm.Data, err)
	}
}

// TestValidateMutatingExpressions: the matchConditions, variables and mutations of a
// policy must compile when written, each error at upstream's field path; a good policy,
// whose mutation uses a variable and params, passes.
func TestValidateMutatingExpressions(t *testing.T) {
	p := field.NewPath("spec")
	good := mapPolicy("p", applyConfig(`Object{metadata: Object.metadata{labels: {"n": variables.n, "t": params.data.t}}}`),
		jsonPatch(`[JSONPatch{op: "add", path: "/data/x", value: variables.n}]`)).Spec
	good.ParamKind = &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	good.Variables = []admissionregv1.Variable{{Name: "n", Expression: "object.metadata.name"}}
	if conds, muts := policy.ValidateMutatingExpressions(&good, p); len(conds) != 0 || len(muts) != 0 {
		t.Fatalf("good policy: %v %v", conds, muts)
	}
	bad := mapPolicy("p", applyConfig(`Object{metadata: Object.metadata{labels: {"x": nope}}}`), jsonPatch(`"not a list"`), applyConfig(" ")).Spec
	bad.Variables = []admissionregv1.Variable{{Name: "v", Expression: "object.nope +"}}
	bad.MatchConditions = []admissionregv1.MatchCondition{{Name: "m", Expression: "params.x"}}
	conds, muts := policy.ValidateMutatingExpressions(&bad, p)
	var got []string
	for _, e := range conds {
		got = append(got, e.Field+" "+string(e.Type))
	}
	for i := range bad.Mutations {
		for _, e := range muts[i] {
			got = append(got, e.Field+" "+string(e.Type))
		}
	}
	want := "[spec.matchConditions[0].expression FieldValueInvalid spec.variables[0].expression FieldValueInvalid " +
		"spec.mutations[0].applyConfiguration.expression FieldValueInvalid spec.mutations[1].jsonPatch.expression FieldValueInvalid " +
		"spec.mutations[2].applyConfiguration.expression FieldValueRequired]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
}
