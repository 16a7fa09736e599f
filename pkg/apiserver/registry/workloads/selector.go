package workloads

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateWorkloadSelector is the selector check of deployments, replica sets, stateful sets
// and daemon sets: required, valid, not empty; it returns the parsed selector or nil.
func validateWorkloadSelector(sel *metav1.LabelSelector, p *field.Path, kind string) (labels.Selector, field.ErrorList) {
	if sel == nil {
		return nil, field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "empty selector is invalid for "+kind))
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, append(errs, field.Invalid(p, sel, "invalid label selector"))
	}
	return s, errs
}
