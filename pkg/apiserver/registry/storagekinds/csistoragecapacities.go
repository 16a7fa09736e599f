package storagekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func CSIStorageCapacitiesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storage.k8s.io", Version: "v1", Kind: "CSIStorageCapacity", ListKind: "CSIStorageCapacityList", Plural: "csistoragecapacities",
			Singular: "csistoragecapacity", Namespaced: true},
		New:     func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
		NewList: func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				c := obj.(*storagev1.CSIStorageCapacity)
				var errs field.ErrorList
				if c.StorageClassName == "" {
					errs = append(errs, field.Required(field.NewPath("storageClassName"), ""))
				} else {
					errs = append(errs, registry.ValidateDNS1123Subdomain(c.StorageClassName, field.NewPath("storageClassName"))...)
				}
				if c.NodeTopology != nil {
					errs = append(errs, registry.ValidateSelector(c.NodeTopology, field.NewPath("nodeTopology"))...)
				}
				if c.Capacity != nil {
					errs = append(errs, registry.ValidateNonNegativeQuantity(*c.Capacity, field.NewPath("capacity"))...)
				}
				if c.MaximumVolumeSize != nil {
					errs = append(errs, registry.ValidateNonNegativeQuantity(*c.MaximumVolumeSize, field.NewPath("maximumVolumeSize"))...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				c, o := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
				errs := registry.ImmutableField(c.StorageClassName, o.StorageClassName, field.NewPath("storageClassName"))
				return append(errs, registry.ImmutableField(c.NodeTopology, o.NodeTopology, field.NewPath("nodeTopology"))...)
			},
		},
	}
}
