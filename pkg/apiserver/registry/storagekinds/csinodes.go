package storagekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CSINodesKind serves CSINodes; since 1.37 with a /status (volume health, written by the
// kubelet) that main-resource writes keep and that keeps the spec, as upstream.
func CSINodesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storage.k8s.io", Version: "v1", Kind: "CSINode", ListKind: "CSINodeList", Plural: "csinodes", Singular: "csinode"},
		New:   func() runtime.Object { return &storagev1.CSINode{} },
		NewList: func() runtime.Object {
			return &storagev1.CSINodeList{}
		},
		Status: true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) { obj.(*storagev1.CSINode).Status = storagev1.CSINodeStatus{} },
			PrepareForUpdate: registry.Rule(func(n, old *storagev1.CSINode) { n.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(n, old *storagev1.CSINode) {
				n.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&n.ObjectMeta, &old.ObjectMeta)
			}),
			Validate: func(obj runtime.Object) field.ErrorList {
				var errs field.ErrorList
				names := map[string]bool{}
				p := field.NewPath("spec", "drivers")
				for i, d := range obj.(*storagev1.CSINode).Spec.Drivers {
					dp := p.Index(i)
					if d.Name == "" {
						errs = append(errs, field.Required(dp.Child("name"), ""))
					} else if names[d.Name] {
						errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
					}
					names[d.Name] = true
					if d.NodeID == "" {
						errs = append(errs, field.Required(dp.Child("nodeID"), ""))
					}
					if d.Allocatable != nil && d.Allocatable.Count != nil && *d.Allocatable.Count < 0 {
						errs = append(errs, field.Invalid(dp.Child("allocatable", "count"), *d.Allocatable.Count, "must be greater than or equal to 0"))
					}
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				// A driver's nodeID and topology keys may not change while it is registered.
				var errs field.ErrorList
				oldByName := map[string]storagev1.CSINodeDriver{}
				for _, d := range old.(*storagev1.CSINode).Spec.Drivers {
					oldByName[d.Name] = d
				}
				p := field.NewPath("spec", "drivers")
				for i, d := range obj.(*storagev1.CSINode).Spec.Drivers {
					if o, ok := oldByName[d.Name]; ok {
						errs = append(errs, registry.ImmutableField(d.NodeID, o.NodeID, p.Index(i).Child("nodeID"))...)
						errs = append(errs, registry.ImmutableField(d.TopologyKeys, o.TopologyKeys, p.Index(i).Child("topologyKeys"))...)
					}
				}
				return errs
			},
		},
	}
}
