package controlplane

import (
	"context"
	"fmt"
	"reflect"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EquivalentResource is a resource serving the same objects as another, and its kind.
type EquivalentResource struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// EquivalentResources are the served resources holding the same objects as gvr (itself
// included), for admission webhooks' matchPolicy Equivalent: the other served versions of a
// built-in resource (autoscaling/v1 and v2 HorizontalPodAutoscalers) or of a custom
// resource. They are the ones ConvertForAdmission converts between. Upstream's cross-group
// equivalents (extensions/v1beta1 for apps and networking.k8s.io) are not served by
// kube-apiserver 1.33 nor by hacp.
func (r *Registry) EquivalentResources(gvr schema.GroupVersionResource) []EquivalentResource {
	var out []EquivalentResource
	for _, res := range r.Resources {
		k := res.Store.Definition()
		if k.Group == gvr.Group && k.Plural == gvr.Resource {
			out = append(out, EquivalentResource{Resource: k.GroupVersion().WithResource(k.Plural), Kind: k.GVK()})
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, res := range r.crd.Versions(gvr.GroupResource()) {
		k := res.Store.Definition()
		out = append(out, EquivalentResource{Resource: k.GroupVersion().WithResource(k.Plural), Kind: k.GVK()})
	}
	return out
}

// ConvertForAdmission returns obj (not changed) as kind to: a built-in between its served
// versions (through the stored version's conversion), a custom object between its
// definition's versions (conversion None: apiVersion only; Webhook: the conversion webhook).
func (r *Registry) ConvertForAdmission(ctx context.Context, obj runtime.Object, to schema.GroupVersionKind) (runtime.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return r.crd.Convert(ctx, u, to)
	}
	var from, target *registry.Kind
	for _, res := range r.Resources {
		k := res.Store.Definition()
		if k.GVK() == to {
			target = k
		}
		if k.Group == to.Group && k.Kind == to.Kind && reflect.TypeOf(k.New()) == reflect.TypeOf(obj) {
			from = k
		}
	}
	if from == nil || target == nil {
		return nil, fmt.Errorf("cannot convert %T to %s", obj, to)
	}
	if from == target {
		return obj.DeepCopyObject(), nil
	}
	stored := obj.DeepCopyObject()
	if from.StorageOf != nil {
		stored = from.StorageOf.ToStorage(stored)
	}
	if target.StorageOf != nil {
		if reflect.TypeOf(stored) != reflect.TypeOf(target.StorageOf.StorageNew()) {
			return nil, fmt.Errorf("cannot convert %T to %s", obj, to)
		}
		stored = target.StorageOf.FromStorage(stored)
	}
	if reflect.TypeOf(stored) != reflect.TypeOf(target.New()) {
		return nil, fmt.Errorf("cannot convert %T to %s", obj, to)
	}
	stored.GetObjectKind().SetGroupVersionKind(to)
	return stored, nil
}
