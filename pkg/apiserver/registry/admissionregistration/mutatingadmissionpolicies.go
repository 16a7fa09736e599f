package admissionregistration

import (
	"github.com/hacp/hacp/pkg/apiserver/admission/policy"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MutatingAdmissionPoliciesKind serves MutatingAdmissionPolicies (v1, GA and on by default
// in 1.36). The registry stores them; applying their mutations is admission's job.
func MutatingAdmissionPoliciesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicy", ListKind: "MutatingAdmissionPolicyList",
			Plural: "mutatingadmissionpolicies", Singular: "mutatingadmissionpolicy", Categories: []string{"api-extensions"}},
		New:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(p *admissionregistrationv1.MutatingAdmissionPolicy) admissionregistrationv1.MutatingAdmissionPolicySpec {
				return p.Spec
			}),
			Default: func(obj runtime.Object) {
				s := &obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec
				registry.SetDefault(&s.FailurePolicy, admissionregistrationv1.Fail)
				defaultMatchResources(s.MatchConstraints)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateMutatingPolicySpec(&obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec)
			},
		},
	}
}

// MutatingAdmissionPolicyBindingsKind serves the bindings of MutatingAdmissionPolicies.
func MutatingAdmissionPolicyBindingsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicyBinding", ListKind: "MutatingAdmissionPolicyBindingList",
			Plural: "mutatingadmissionpolicybindings", Singular: "mutatingadmissionpolicybinding", Categories: []string{"api-extensions"}},
		New:     func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) admissionregistrationv1.MutatingAdmissionPolicyBindingSpec {
				return b.Spec
			}),
			Default: func(obj runtime.Object) {
				defaultMatchResources(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.MatchResources)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec
				p := field.NewPath("spec", "policyName")
				if s.PolicyName == "" {
					return field.ErrorList{field.Required(p, "")}
				}
				return registry.ValidateDNS1123Subdomain(s.PolicyName, p)
			},
		},
	}
}

// validateMutatingPolicySpec: upstream's rules, the CEL compiled as upstream's (the
// MutatingAdmissionPolicy admission plugin enforces them), in upstream's order.
func validateMutatingPolicySpec(s *admissionregistrationv1.MutatingAdmissionPolicySpec) field.ErrorList {
	p := field.NewPath("spec")
	conds, mutationErrs := policy.ValidateMutatingExpressions(s, p)
	var errs field.ErrorList
	if s.FailurePolicy == nil {
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	} else {
		errs = append(errs, registry.OneOf(*s.FailurePolicy, p.Child("failurePolicy"), admissionregistrationv1.Fail, admissionregistrationv1.Ignore)...)
	}
	switch {
	case s.MatchConstraints == nil:
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	case len(s.MatchConstraints.ResourceRules) == 0:
		errs = append(errs, field.Required(p.Child("matchConstraints", "resourceRules"), ""))
	default:
		// only creates and updates can be mutated
		for _, r := range s.MatchConstraints.ResourceRules {
			for _, op := range r.Operations {
				if op != admissionregistrationv1.OperationAll && op != admissionregistrationv1.Create && op != admissionregistrationv1.Update {
					errs = append(errs, field.NotSupported(p.Child("matchConstraints", "resourceRules", "operations"), op,
						[]admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update}))
				}
			}
		}
	}
	errs = append(errs, conds...)
	if len(s.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range s.Mutations {
		mp := p.Child("mutations").Index(i)
		errs = append(errs, mutationErrs[i]...)
		switch m.PatchType {
		case "":
			errs = append(errs, field.Required(mp.Child("patchType"), ""))
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch == nil {
				errs = append(errs, field.Required(mp.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
			}
			if m.ApplyConfiguration != nil {
				errs = append(errs, field.Invalid(mp.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil {
				errs = append(errs, field.Required(mp.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
			}
			if m.JSONPatch != nil {
				errs = append(errs, field.Invalid(mp.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
			}
		default:
			errs = append(errs, field.NotSupported(mp.Child("patchType"), m.PatchType, []admissionregistrationv1.PatchType{
				admissionregistrationv1.PatchTypeApplyConfiguration, admissionregistrationv1.PatchTypeJSONPatch}))
		}
	}
	if s.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	} else {
		errs = append(errs, registry.OneOf(s.ReinvocationPolicy, p.Child("reinvocationPolicy"), admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)...)
	}
	return errs
}
