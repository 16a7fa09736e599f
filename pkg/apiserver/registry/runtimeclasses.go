package registry

import (
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func runtimeClassesKind() *Kind {
	return &Kind{
		Names: Names{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass", ListKind: "RuntimeClassList", Plural: "runtimeclasses",
			Singular: "runtimeclass"},
		New:     func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList: func() runtime.Object { return &nodev1.RuntimeClassList{} },
		Strategy: Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				rc := obj.(*nodev1.RuntimeClass)
				p := field.NewPath("handler")
				if rc.Handler == "" {
					return field.ErrorList{field.Required(p, "")}
				}
				errs := validateMessages(rc.Handler, utilvalidation.IsDNS1123Label(rc.Handler), p)
				if rc.Overhead != nil {
					errs = append(errs, validateResourceList(rc.Overhead.PodFixed, field.NewPath("overhead", "podFixed"))...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableField(obj.(*nodev1.RuntimeClass).Handler, old.(*nodev1.RuntimeClass).Handler, field.NewPath("handler"))
			},
		},
	}
}
