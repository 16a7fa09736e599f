package cluster

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func RuntimeClassesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass", ListKind: "RuntimeClassList", Plural: "runtimeclasses",
			Singular: "runtimeclass"},
		New:     func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList: func() runtime.Object { return &nodev1.RuntimeClassList{} },
		Strategy: registry.Strategy{
			// upstream: PUT creates missing RuntimeClasses.
			AllowCreateOnUpdate: true,
			Validate: func(obj runtime.Object) field.ErrorList {
				rc := obj.(*nodev1.RuntimeClass)
				p := field.NewPath("handler")
				if rc.Handler == "" {
					return field.ErrorList{field.Required(p, "")}
				}
				errs := registry.ValidateMessages(rc.Handler, utilvalidation.IsDNS1123Label(rc.Handler), p)
				if rc.Overhead != nil {
					errs = append(errs, registry.ValidateResourceList(rc.Overhead.PodFixed, field.NewPath("overhead", "podFixed"))...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.ImmutableField(obj.(*nodev1.RuntimeClass).Handler, old.(*nodev1.RuntimeClass).Handler, field.NewPath("handler"))
			},
		},
	}
}
