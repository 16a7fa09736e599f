package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func LimitRangesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "LimitRange", ListKind: "LimitRangeList", Plural: "limitranges", Singular: "limitrange",
			ShortNames: []string{"limits"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.LimitRange{} },
		NewList: func() runtime.Object { return &corev1.LimitRangeList{} },
		Strategy: registry.Strategy{
			// upstream: PUT creates missing LimitRanges.
			AllowCreateOnUpdate: true,
			Default: func(obj runtime.Object) {
				for i := range obj.(*corev1.LimitRange).Spec.Limits {
					defaultLimitRangeItem(&obj.(*corev1.LimitRange).Spec.Limits[i])
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				var errs field.ErrorList
				for i, it := range obj.(*corev1.LimitRange).Spec.Limits {
					p := field.NewPath("spec", "limits").Index(i)
					errs = append(errs, registry.OneOf(it.Type, p.Child("type"), corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)...)
					errs = append(errs, registry.ValidateResourceList(it.Max, p.Child("max"))...)
					errs = append(errs, registry.ValidateResourceList(it.Min, p.Child("min"))...)
					errs = append(errs, registry.ValidateResourceList(it.Default, p.Child("default"))...)
					errs = append(errs, registry.ValidateResourceList(it.DefaultRequest, p.Child("defaultRequest"))...)
					for name, min := range it.Min {
						if max, ok := it.Max[name]; ok && min.Cmp(max) > 0 {
							errs = append(errs, field.Invalid(p.Child("min").Key(string(name)), min.String(), "min value "+min.String()+" is greater than max value "+max.String()))
						}
					}
				}
				return errs
			},
		},
	}
}

// defaultLimitRangeItem is upstream's SetDefaults_LimitRangeItem: a container's default limit
// is its max, its default request its default limit, else its min.
func defaultLimitRangeItem(it *corev1.LimitRangeItem) {
	if it.Type != corev1.LimitTypeContainer {
		return
	}
	if it.Default == nil {
		it.Default = corev1.ResourceList{}
	}
	if it.DefaultRequest == nil {
		it.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range it.Max {
		if _, ok := it.Default[k]; !ok {
			it.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range it.Default {
		if _, ok := it.DefaultRequest[k]; !ok {
			it.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range it.Min {
		if _, ok := it.DefaultRequest[k]; !ok {
			it.DefaultRequest[k] = v.DeepCopy()
		}
	}
}
