package workloads

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ReplicaSetsKind() *registry.Kind {
	return core.WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Group: "apps", Version: "v1", Kind: "ReplicaSet", ListKind: "ReplicaSetList", Plural: "replicasets", Singular: "replicaset",
			ShortNames: []string{"rs"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Status:  true,
		Scale: &registry.ScaleAccessor{
			Replicas:       func(obj runtime.Object) int32 { return registry.ReplicasOr1(obj.(*appsv1.ReplicaSet).Spec.Replicas) },
			SetReplicas:    func(obj runtime.Object, n int32) { obj.(*appsv1.ReplicaSet).Spec.Replicas = &n },
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.ReplicaSet).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return registry.LabelSelectorString(obj.(*appsv1.ReplicaSet).Spec.Selector)
			},
		},
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(rs, old *appsv1.ReplicaSet) { rs.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(rs, old *appsv1.ReplicaSet) { rs.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(rs *appsv1.ReplicaSet) appsv1.ReplicaSetSpec { return rs.Spec }),
			PrepareForCreate:       func(obj runtime.Object) { obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{} },
			Default: func(obj runtime.Object) {
				rs := obj.(*appsv1.ReplicaSet)
				if rs.Spec.Replicas == nil {
					rs.Spec.Replicas = registry.Int32Ptr(1)
				}
				core.DefaultPodSpec(&rs.Spec.Template.Spec)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				rs := obj.(*appsv1.ReplicaSet)
				p := field.NewPath("spec")
				errs := registry.ValidateNonnegative(rs.Spec.Replicas, p.Child("replicas"))
				errs = append(errs, registry.ValidateNonnegative(&rs.Spec.MinReadySeconds, p.Child("minReadySeconds"))...)
				sel, selErrs := validateWorkloadSelector(rs.Spec.Selector, p.Child("selector"), "deployment") // upstream's wording
				errs = append(errs, selErrs...)
				errs = append(errs, core.ValidatePodTemplate(&rs.Spec.Template, sel, p.Child("template"))...)
				return append(errs, core.ValidateAlwaysRestartTemplate(&rs.Spec.Template, "ReplicaSet", p.Child("template"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.Immutable(obj.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector, field.NewPath("spec", "selector"))
			},
		},
	}, field.NewPath("spec", "template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec {
			o := obj.(*appsv1.ReplicaSet)
			return &o.Spec.Template
		})
}
