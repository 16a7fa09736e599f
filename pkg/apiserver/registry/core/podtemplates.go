package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func PodTemplatesKind() *registry.Kind {
	return WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "PodTemplate", ListKind: "PodTemplateList", Plural: "podtemplates", Singular: "podtemplate",
			Namespaced: true},
		New:     func() runtime.Object { return &corev1.PodTemplate{} },
		NewList: func() runtime.Object { return &corev1.PodTemplateList{} },
		Strategy: registry.Strategy{
			// Any change of the template starts a new generation, as upstream.
			SpecChanged: registry.Changed(func(t *corev1.PodTemplate) corev1.PodTemplateSpec { return t.Template }),
			Default:     func(obj runtime.Object) { DefaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec) },
			Validate: func(obj runtime.Object) field.ErrorList {
				return ValidatePodTemplate(&obj.(*corev1.PodTemplate).Template, nil, field.NewPath("template"))
			},
		},
	}, field.NewPath("template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec { o := obj.(*corev1.PodTemplate); return &o.Template })
}
