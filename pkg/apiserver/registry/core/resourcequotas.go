package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ResourceQuotasKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "ResourceQuota", ListKind: "ResourceQuotaList", Plural: "resourcequotas", Singular: "resourcequota",
			ShortNames: []string{"quota"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.ResourceQuota{} },
		NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate:       func(obj runtime.Object) { obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{} },
			PrepareForUpdate:       registry.Rule(func(q, old *corev1.ResourceQuota) { q.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(q, old *corev1.ResourceQuota) { q.Spec = old.Spec }),
			Validate: func(obj runtime.Object) field.ErrorList {
				q := obj.(*corev1.ResourceQuota)
				errs := registry.ValidateResourceList(q.Spec.Hard, field.NewPath("spec", "hard"))
				errs = append(errs, registry.ValidateResourceList(q.Status.Hard, field.NewPath("status", "hard"))...)
				errs = append(errs, registry.ValidateResourceList(q.Status.Used, field.NewPath("status", "used"))...)
				for i, s := range q.Spec.Scopes {
					errs = append(errs, registry.OneOf(s, field.NewPath("spec", "scopes").Index(i), corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
						corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass,
						corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ResourceQuotaScopeVolumeAttributesClass)...)
				}
				return errs
			},
		},
	}
}
