package networking

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func IngressClassesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass", ListKind: "IngressClassList", Plural: "ingressclasses",
			Singular: "ingressclass"},
		New:     func() runtime.Object { return &networkingv1.IngressClass{} },
		NewList: func() runtime.Object { return &networkingv1.IngressClassList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(c *networkingv1.IngressClass) networkingv1.IngressClassSpec { return c.Spec }),
			Default: func(obj runtime.Object) {
				if p := obj.(*networkingv1.IngressClass).Spec.Parameters; p != nil {
					registry.SetDefault(&p.Scope, networkingv1.IngressClassParametersReferenceScopeCluster)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				ic := obj.(*networkingv1.IngressClass)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if ic.Spec.Controller == "" {
					errs = append(errs, field.Required(p.Child("controller"), ""))
				} else {
					errs = append(errs, registry.ValidateQualifiedName(ic.Spec.Controller, p.Child("controller"))...)
				}
				if par := ic.Spec.Parameters; par != nil {
					pp := p.Child("parameters")
					if par.Kind == "" {
						errs = append(errs, field.Required(pp.Child("kind"), "kind is required"))
					}
					if par.Name == "" {
						errs = append(errs, field.Required(pp.Child("name"), "name is required"))
					}
					if par.Scope != nil {
						errs = append(errs, registry.OneOf(*par.Scope, pp.Child("scope"), networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace)...)
						switch {
						case *par.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace && par.Namespace == nil:
							errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
						case *par.Scope == networkingv1.IngressClassParametersReferenceScopeCluster && par.Namespace != nil:
							errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
						}
					}
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.ImmutableField(obj.(*networkingv1.IngressClass).Spec.Controller, old.(*networkingv1.IngressClass).Spec.Controller, field.NewPath("spec", "controller"))
			},
		},
	}
}
