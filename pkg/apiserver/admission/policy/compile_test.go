package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// enforce makes p enforce pol with one Deny binding, as a rebuild would.
func enforce(p *Plugin, pol *admissionregv1.ValidatingAdmissionPolicy) {
	b := &admissionregv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: pol.Name, ValidationActions: []admissionregv1.ValidationAction{admissionregv1.Deny}}}
	hooks := []*hook{{policy: pol, bindings: []*admissionregv1.ValidatingAdmissionPolicyBinding{b}, eval: compile(pol)}}
	p.hooks.Store(&hooks)
}

// namespaceCreate is a Namespace's create: cluster-scoped, so no namespace lookup.
func namespaceCreate() *admission.Attributes {
	return &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"),
		Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "x",
		Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}
}

func anyResource() *admissionregv1.MatchResources {
	return &admissionregv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
		ResourceRules: []admissionregv1.NamedRuleWithOperations{{RuleWithOperations: admissionregv1.RuleWithOperations{
			Operations: []admissionregv1.OperationType{admissionregv1.OperationAll},
			Rule:       admissionregv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}}}
}

// TestStoredPoliciesThatDoNotCompile: a stored policy whose expressions no longer compile
// (validation refuses them now, but an older server or CEL library may have stored them) is
// an evaluation error under failurePolicy (Fail: 422 naming the policy, Ignore: admitted),
// never a panic.
func TestStoredPoliciesThatDoNotCompile(t *testing.T) {
	const prefix = `namespaces "x" is forbidden: ValidatingAdmissionPolicy 'p' `
	for i, tc := range []struct {
		spec admissionregv1.ValidatingAdmissionPolicySpec
		want string // "" admitted; else the message's start after the prefix, "*" for "with binding 'b' denied request: "
	}{
		{admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "nope == 1"}}},
			"* compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope == 1\n | ^"},
		{admissionregv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregv1.Ignore), Validations: []admissionregv1.Validation{{Expression: "nope == 1"}}}, ""},
		{admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "'yes'"}}}, "* compilation error: must evaluate to bool"},
		{admissionregv1.ValidatingAdmissionPolicySpec{Variables: []admissionregv1.Variable{{Name: "v", Expression: "}{"}},
			Validations: []admissionregv1.Validation{{Expression: "variables.v"}}}, "* compilation error: "},
		{admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "false", MessageExpression: "1 +"}}}, "* failed expression: false"},
		{admissionregv1.ValidatingAdmissionPolicySpec{AuditAnnotations: []admissionregv1.AuditAnnotation{{Key: "k", ValueExpression: "1"}}}, "* compilation error: "},
		{admissionregv1.ValidatingAdmissionPolicySpec{MatchConditions: []admissionregv1.MatchCondition{{Name: "m", Expression: "nope("}},
			Validations: []admissionregv1.Validation{{Expression: "true"}}}, "* compilation error: "},
		{admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: &admissionregv1.ParamKind{APIVersion: "a/b/c", Kind: "X"}, Validations: []admissionregv1.Validation{{Expression: "true"}}},
			"denied request: failed to configure policy: failed to parse paramKind APIVersion: unexpected GroupVersion string: a/b/c"},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := New(Config{})
			tc.spec.MatchConstraints = anyResource()
			enforce(p, &admissionregv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.spec})
			err := p.Validate(context.Background(), namespaceCreate())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("admitted expected, got %v", err)
				}
				return
			}
			want := prefix + strings.Replace(tc.want, "* ", "with binding 'b' denied request: ", 1)
			if !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v,\nwant 422 %q...", err, want)
			}
		})
	}
}

// TestValidateExpressions: what upstream's validation says of expressions that do not
// compile or return the wrong type, with its field paths.
func TestValidateExpressions(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec admissionregv1.ValidatingAdmissionPolicySpec
		want []string // "type field: detail", prefixes
	}{
		{"valid", admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			Variables:        []admissionregv1.Variable{{Name: "n", Expression: "size(object.data)"}},
			MatchConditions:  []admissionregv1.MatchCondition{{Name: "m", Expression: "params != null && authorizer != null"}},
			Validations:      []admissionregv1.Validation{{Expression: "variables.n < int(params.data.max)", MessageExpression: "'n: ' + string(variables.n)", Reason: ptr.To(metav1.StatusReasonForbidden)}},
			AuditAnnotations: []admissionregv1.AuditAnnotation{{Key: "k", ValueExpression: "request.userInfo.username"}}}, nil},
		{"undeclared", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "nope"}}},
			[]string{"Invalid value spec.validations[0].expression: compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope'"}},
		{"params without paramKind", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "params == null"}}},
			[]string{"Invalid value spec.validations[0].expression: compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'"}},
		{"not a bool", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "'x'", MessageExpression: "1"}}},
			[]string{"Invalid value spec.validations[0].expression: must evaluate to bool", "Invalid value spec.validations[0].messageExpression: must evaluate to string"}},
		{"messageExpression has no authorizer", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "true", MessageExpression: "string(authorizer)"}}},
			[]string{"Invalid value spec.validations[0].messageExpression: compilation failed: ERROR: <input>:1:8: undeclared reference to 'authorizer'"}},
		{"bad names, message and reason", admissionregv1.ValidatingAdmissionPolicySpec{Variables: []admissionregv1.Variable{{Name: "in", Expression: "1"}},
			Validations: []admissionregv1.Validation{{Expression: "true", Message: "a\nb", Reason: ptr.To(metav1.StatusReasonConflict)}}},
			[]string{"Invalid value spec.variables[0].name: must be a valid CEL identifier", "Invalid value spec.validations[0].message: must not contain line breaks",
				`Unsupported value spec.validations[0].reason: supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"`}},
		{"audit annotation type and duplicate key", admissionregv1.ValidatingAdmissionPolicySpec{AuditAnnotations: []admissionregv1.AuditAnnotation{
			{Key: "k", ValueExpression: "1"}, {Key: "k", ValueExpression: "'x'"}}},
			[]string{"Invalid value spec.auditAnnotations[0].valueExpression: must evaluate to one of", "Duplicate value spec.auditAnnotations[1].key: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateExpressions("p", &tc.spec, field.NewPath("spec"))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				got := fmt.Sprintf("%s %s: %s", e.Type, e.Field, e.Detail)
				if !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("error %d: %q, want %q...", i, got, tc.want[i])
				}
			}
		})
	}
}

// BenchmarkValidate is one request through the plugin: with no policy bound, and with one
// matching policy of one validation (the forbidden-label check).
func BenchmarkValidate(b *testing.B) {
	for _, bound := range []bool{false, true} {
		b.Run(fmt.Sprintf("bound=%v", bound), func(b *testing.B) {
			p := New(Config{})
			if bound {
				enforce(p, &admissionregv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
					Spec: admissionregv1.ValidatingAdmissionPolicySpec{MatchConstraints: anyResource(), Validations: []admissionregv1.Validation{{
						Expression: "!has(object.metadata.labels) || object.metadata.labels.forbidden != 'true'"}}}})
			}
			a := namespaceCreate()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Validate(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
