package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func podTemplatesKind() *Kind {
	return &Kind{
		Names: Names{Version: "v1", Kind: "PodTemplate", ListKind: "PodTemplateList", Plural: "podtemplates", Singular: "podtemplate",
			Namespaced: true},
		New:     func() runtime.Object { return &corev1.PodTemplate{} },
		NewList: func() runtime.Object { return &corev1.PodTemplateList{} },
		Strategy: Strategy{
			GenerationOnSpec: true,
			Default:          func(obj runtime.Object) { defaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec) },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validatePodTemplate(&obj.(*corev1.PodTemplate).Template, nil, field.NewPath("template"))
			},
		},
	}
}
