package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ReplicationControllersKind() *registry.Kind {
	return WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "ReplicationController", ListKind: "ReplicationControllerList", Plural: "replicationcontrollers", Singular: "replicationcontroller",
			ShortNames: []string{"rc"}, Categories: []string{"all"}, Namespaced: true},
		KeyRoot: "controllers", // upstream's key
		New:     func() runtime.Object { return &corev1.ReplicationController{} },
		NewList: func() runtime.Object { return &corev1.ReplicationControllerList{} },
		Status:  true,
		Scale: &registry.ScaleAccessor{
			Replicas: func(obj runtime.Object) int32 {
				return registry.ReplicasOr1(obj.(*corev1.ReplicationController).Spec.Replicas)
			},
			SetReplicas:    func(obj runtime.Object, n int32) { obj.(*corev1.ReplicationController).Spec.Replicas = &n },
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*corev1.ReplicationController).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return registry.MapSelectorString(obj.(*corev1.ReplicationController).Spec.Selector)
			},
		},
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(rc, old *corev1.ReplicationController) { rc.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(rc, old *corev1.ReplicationController) { rc.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(rc *corev1.ReplicationController) corev1.ReplicationControllerSpec { return rc.Spec }),
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*corev1.ReplicationController).Status = corev1.ReplicationControllerStatus{}
			},
			Default: func(obj runtime.Object) {
				rc := obj.(*corev1.ReplicationController)
				if t := rc.Spec.Template; t != nil && t.Labels != nil {
					if len(rc.Spec.Selector) == 0 {
						rc.Spec.Selector = t.Labels
					}
					if len(rc.Labels) == 0 {
						rc.Labels = t.Labels
					}
				}
				if rc.Spec.Replicas == nil {
					rc.Spec.Replicas = registry.Int32Ptr(1)
				}
				if rc.Spec.Template != nil {
					DefaultPodSpec(&rc.Spec.Template.Spec)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*corev1.ReplicationController).Spec
				p := field.NewPath("spec")
				errs := registry.ValidateNonnegative(&s.MinReadySeconds, p.Child("minReadySeconds"))
				if len(s.Selector) == 0 {
					errs = append(errs, field.Required(p.Child("selector"), ""))
				}
				if s.Replicas == nil {
					errs = append(errs, field.Required(p.Child("replicas"), ""))
				} else {
					errs = append(errs, registry.ValidateNonnegative(s.Replicas, p.Child("replicas"))...)
				}
				if s.Template == nil {
					return append(errs, field.Required(p.Child("template"), ""))
				}
				errs = append(errs, ValidatePodTemplate(s.Template, labels.SelectorFromSet(s.Selector), p.Child("template"))...)
				return append(errs, ValidateAlwaysRestartTemplate(s.Template, "ReplicationController", p.Child("template"))...)
			},
		},
	}, field.NewPath("spec", "template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec {
			return obj.(*corev1.ReplicationController).Spec.Template
		})
}
