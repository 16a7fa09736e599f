package admissionregistration

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bindings are stored and served; enforcing them is admission's job.
func ValidatingAdmissionPolicyBindingsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding", ListKind: "ValidatingAdmissionPolicyBindingList",
			Plural: "validatingadmissionpolicybindings", Singular: "validatingadmissionpolicybinding", Categories: []string{"api-extensions"}},
		New:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec {
				return b.Spec
			}),
			Default: func(obj runtime.Object) {
				defaultMatchResources(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec
				p := field.NewPath("spec")
				var errs field.ErrorList
				if s.PolicyName == "" {
					errs = append(errs, field.Required(p.Child("policyName"), ""))
				} else {
					errs = append(errs, registry.ValidateDNS1123Subdomain(s.PolicyName, p.Child("policyName"))...)
				}
				if len(s.ValidationActions) == 0 {
					errs = append(errs, field.Required(p.Child("validationActions"), ""))
				}
				for i, a := range s.ValidationActions {
					errs = append(errs, registry.OneOf(a, p.Child("validationActions").Index(i), admissionregistrationv1.Audit, admissionregistrationv1.Deny, admissionregistrationv1.Warn)...)
				}
				return errs
			},
		},
	}
}
