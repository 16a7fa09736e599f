package customresources

import (
	"context"
	"fmt"
	"maps"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func (r *Manager) Convert(ctx context.Context, u *unstructured.Unstructured, to schema.GroupVersionKind) (runtime.Object, error) {
	var def *apiextensionsv1.CustomResourceDefinition
	r.custom.mu.RLock()
	for _, d := range r.custom.defs {
		if d.Spec.Group == to.Group && d.Spec.Names.Kind == to.Kind {
			def = d
		}
	}
	r.custom.mu.RUnlock()
	if def == nil {
		return nil, fmt.Errorf("cannot convert to %s: no such custom resource", to)
	}
	apiVersion := to.GroupVersion().String()
	if c := r.newWebhookConverter(def); c != nil {
		m, err := c.convert(ctx, u.Object, apiVersion)
		if err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	}
	out := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	out = out.DeepCopy()
	out.SetAPIVersion(apiVersion)
	return out, nil
}
