package workloads

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	policyv1 "k8s.io/api/policy/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func PodDisruptionBudgetsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", ListKind: "PodDisruptionBudgetList", Plural: "poddisruptionbudgets", Singular: "poddisruptionbudget",
			ShortNames: []string{"pdb"}, Namespaced: true},
		New:     func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(pdb, old *policyv1.PodDisruptionBudget) { pdb.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(pdb, old *policyv1.PodDisruptionBudget) { pdb.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(pdb *policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudgetSpec { return pdb.Spec }),
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := obj.(*policyv1.PodDisruptionBudget).Spec
				p := field.NewPath("spec")
				var errs field.ErrorList
				if s.MinAvailable != nil && s.MaxUnavailable != nil {
					errs = append(errs, field.Invalid(p, s, "minAvailable and maxUnavailable cannot be both set"))
				}
				if s.MinAvailable != nil {
					errs = append(errs, validatePositiveIntOrPercent(*s.MinAvailable, p.Child("minAvailable"), true)...)
				}
				if s.MaxUnavailable != nil {
					errs = append(errs, validatePositiveIntOrPercent(*s.MaxUnavailable, p.Child("maxUnavailable"), true)...)
				}
				errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
				if pol := s.UnhealthyPodEvictionPolicy; pol != nil && *pol != policyv1.IfHealthyBudget && *pol != policyv1.AlwaysAllow {
					errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *pol, []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
				}
				return errs
			},
		},
	}
}

// validatePositiveIntOrPercent is apps validation's ValidatePositiveIntOrPercent, and with
// atMost100 its IsNotMoreThan100Percent.
func validatePositiveIntOrPercent(v intstr.IntOrString, p *field.Path, atMost100 bool) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		if len(errs) == 0 && atMost100 {
			if n, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, false); err == nil && n > 100 {
				errs = append(errs, field.Invalid(p, v, "must not be greater than 100%"))
			}
		}
		return errs
	case intstr.Int:
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(p, int64(v.IntVal), "must be greater than or equal to 0")}
		}
	}
	return nil
}
