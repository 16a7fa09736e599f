package plugins

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Annotations of the Ingress class defaulting.
const (
	isDefaultIngressClass = "ingressclass.kubernetes.io/is-default-class"
	legacyIngressClass    = "kubernetes.io/ingress.class"
)

// DefaultIngressClass is upstream's plugin of that name: a new Ingress that names no class
// (neither spec.ingressClassName nor the legacy kubernetes.io/ingress.class annotation) gets
// the default IngressClass, the newest of those annotated
// ingressclass.kubernetes.io/is-default-class: "true".
type DefaultIngressClass struct {
	admission.Operations
	classes *informer.Informer[*networkingv1.IngressClass]
}

// NewDefaultIngressClass reads IngressClasses from the shared informers.
func NewDefaultIngressClass(f *informer.Factory) *DefaultIngressClass {
	return &DefaultIngressClass{Operations: admission.Operations{admission.Create}, classes: informer.For[*networkingv1.IngressClass](f, schema.GroupResource{Group: "networking.k8s.io", Resource: "ingressclasses"})}
}

// Start waits until the class informer holds its first list.
func (d *DefaultIngressClass) Start(ctx context.Context) { _ = d.classes.WaitForSync(ctx) }

// Admit sets the default class.
func (d *DefaultIngressClass) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "networking.k8s.io" || a.Resource.Resource != "ingresses" || a.Subresource != "" {
		return nil
	}
	ing, ok := a.Object.(*networkingv1.Ingress)
	if !ok || ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[legacyIngressClass]; ok {
		return nil
	}
	def, ok := newestDefault(d.classes.List(""), func(c *networkingv1.IngressClass) bool {
		return c.Annotations[isDefaultIngressClass] == "true"
	})
	if ok {
		name := def.Name
		ing.Spec.IngressClassName = &name
	}
	return nil
}
