package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/openapi"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/ptr"
)

// enforceMutating makes p enforce pol with one binding, as a rebuild would, without the
// registry's validation (a policy stored by an older server or CEL library).
func enforceMutating(p *Mutating, pol *admissionregv1.MutatingAdmissionPolicy) {
	b := &admissionregv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregv1.MutatingAdmissionPolicyBindingSpec{PolicyName: pol.Name}}
	hooks := []*mutatingHook{{policy: pol, bindings: []*admissionregv1.MutatingAdmissionPolicyBinding{b}, eval: compileMutations(pol)}}
	p.hooks.Store(&hooks)
}

func schemaOf(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	obj, err := registry.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	models, err := openapi.Models(obj, gvk, nil)
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(models, false)
}

// TestStoredMutatingPoliciesThatDoNotCompile: a stored policy whose expressions do not
// compile is upstream's 403 Invalid under failurePolicy Fail (the compiler's message after
// "compilation failed: "), is passed over under Ignore, and never panics; a mutation whose
// patch type field is missing fails the request as upstream's (500).
func TestStoredMutatingPoliciesThatDoNotCompile(t *testing.T) {
	const prefix = "policy 'p' with binding 'b' denied request: "
	apply := func(expr string) admissionregv1.Mutation {
		return admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregv1.ApplyConfiguration{Expression: expr}}
	}
	for i, tc := range []struct {
		spec admissionregv1.MutatingAdmissionPolicySpec
		code int32
		want string // "" admitted
	}{
		{admissionregv1.MutatingAdmissionPolicySpec{Mutations: []admissionregv1.Mutation{apply(`Object{metadata: Object.metadata{labels: {"x": nope}}}`)}}, 403,
			prefix + "compilation failed: ERROR: <input>:1:48: undeclared reference to 'nope' (in container '')\n | Object{metadata: Object.metadata{labels: {\"x\": nope}}}\n | ...............................................^"},
		{admissionregv1.MutatingAdmissionPolicySpec{Mutations: []admissionregv1.Mutation{{PatchType: admissionregv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregv1.JSONPatch{Expression: `"not a list"`}}}}, 403, prefix + "must evaluate to list(JSONPatch) but got string"},
		{admissionregv1.MutatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregv1.Ignore), Mutations: []admissionregv1.Mutation{apply(`nope`)}}, 0, ""},
		{admissionregv1.MutatingAdmissionPolicySpec{Variables: []admissionregv1.Variable{{Name: "v", Expression: "}{"}},
			Mutations: []admissionregv1.Mutation{apply(`Object{metadata: Object.metadata{labels: {"x": variables.v}}}`)}}, 403, prefix},
		{admissionregv1.MutatingAdmissionPolicySpec{Mutations: []admissionregv1.Mutation{{PatchType: admissionregv1.PatchTypeJSONPatch}}}, 500,
			"Internal error occurred: expected 1 compiled evaluators for policy p, got 0"},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := NewMutating(Config{TypeConverter: schemaOf, Scheme: registry.Scheme})
			tc.spec.MatchConstraints = anyResource()
			tc.spec.ReinvocationPolicy = admissionregv1.NeverReinvocationPolicy
			enforceMutating(p, &admissionregv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.spec})
			a := namespaceCreate()
			err := p.Admit(context.Background(), a)
			if tc.want == "" {
				if err != nil || len(a.Object.(*corev1.Namespace).Labels) != 0 {
					t.Fatalf("admitted unchanged expected, got %v", err)
				}
				return
			}
			se, ok := err.(*apierrors.StatusError)
			if !ok || se.ErrStatus.Code != tc.code || len(se.ErrStatus.Message) < len(tc.want) || se.ErrStatus.Message[:len(tc.want)] != tc.want {
				t.Fatalf("got %v,\nwant %d %q...", err, tc.code, tc.want)
			}
			if tc.code == 403 && se.ErrStatus.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("reason %s", se.ErrStatus.Reason)
			}
		})
	}
}
