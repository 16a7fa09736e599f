package admissionregistration

import (
	"github.com/hacp/hacp/pkg/apiserver/admission/policy"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatingAdmissionPolicies and their bindings are stored and served; their CEL must
// compile, and the ValidatingAdmissionPolicy admission plugin enforces them.
func ValidatingAdmissionPoliciesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy", ListKind: "ValidatingAdmissionPolicyList",
			Plural: "validatingadmissionpolicies", Singular: "validatingadmissionpolicy", Categories: []string{"api-extensions"}},
		New:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Status = old.Status }),
			// The type checker's status writes may change status only (upstream resets
			// metadata as for any status write, managedFields aside).
			PrepareForStatusUpdate: registry.Rule(func(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) {
				p.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&p.ObjectMeta, &old.ObjectMeta)
			}),
			SpecChanged: registry.Changed(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) admissionregistrationv1.ValidatingAdmissionPolicySpec {
				return p.Spec
			}),
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
			},
			Default: func(obj runtime.Object) {
				s := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
				registry.SetDefault(&s.FailurePolicy, admissionregistrationv1.Fail)
				defaultMatchResources(s.MatchConstraints)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				pol := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
				s := pol.Spec
				p := field.NewPath("spec")
				var errs field.ErrorList
				if s.FailurePolicy != nil {
					errs = append(errs, registry.OneOf(*s.FailurePolicy, p.Child("failurePolicy"), admissionregistrationv1.Fail, admissionregistrationv1.Ignore)...)
				}
				if s.MatchConstraints == nil || len(s.MatchConstraints.ResourceRules) == 0 {
					errs = append(errs, field.Required(p.Child("matchConstraints", "resourceRules"), ""))
				}
				if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
					errs = append(errs, field.Required(p.Child("validations"), "validations or auditAnnotations must contain at least one item"))
					errs = append(errs, field.Required(p.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
				}
				// The CEL expressions compile as upstream's (the ValidatingAdmissionPolicy
				// admission plugin enforces them).
				return append(errs, policy.ValidateExpressions(pol.Name, &s, p)...)
			},
		},
	}
}

// defaultMatchResources is upstream's SetDefaults_MatchResources and _NamedRuleWithOperations.
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	registry.SetDefault(&m.MatchPolicy, admissionregistrationv1.Equivalent)
	registry.SetDefault(&m.NamespaceSelector, metav1.LabelSelector{})
	registry.SetDefault(&m.ObjectSelector, metav1.LabelSelector{})
	for i := range m.ResourceRules {
		registry.SetDefault(&m.ResourceRules[i].Scope, admissionregistrationv1.AllScopes)
	}
	for i := range m.ExcludeResourceRules {
		registry.SetDefault(&m.ExcludeResourceRules[i].Scope, admissionregistrationv1.AllScopes)
	}
}
