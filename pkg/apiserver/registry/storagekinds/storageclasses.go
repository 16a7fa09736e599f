// Package storagekinds holds the storage.k8s.io kinds: storage classes, CSI drivers, CSI nodes, CSI
// storage capacities and volume attachments (named so as not to be taken for
// pkg/apiserver/storage, which knows etcd).
// Each kind is one file whose XxxKind function the controlplane lists.
package storagekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func StorageClassesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass", ListKind: "StorageClassList", Plural: "storageclasses",
			Singular: "storageclass", ShortNames: []string{"sc"}},
		New:     func() runtime.Object { return &storagev1.StorageClass{} },
		NewList: func() runtime.Object { return &storagev1.StorageClassList{} },
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				sc := obj.(*storagev1.StorageClass)
				registry.SetDefault(&sc.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
				registry.SetDefault(&sc.VolumeBindingMode, storagev1.VolumeBindingImmediate)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				sc := obj.(*storagev1.StorageClass)
				var errs field.ErrorList
				if sc.Provisioner == "" {
					errs = append(errs, field.Required(field.NewPath("provisioner"), ""))
				} else {
					errs = append(errs, registry.ValidateQualifiedName(sc.Provisioner, field.NewPath("provisioner"))...)
				}
				errs = append(errs, validateParameters(sc.Parameters, true, field.NewPath("parameters"))...)
				if sc.ReclaimPolicy != nil {
					errs = append(errs, registry.OneOf(*sc.ReclaimPolicy, field.NewPath("reclaimPolicy"), corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain)...)
				}
				if sc.VolumeBindingMode == nil {
					errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
				} else {
					errs = append(errs, registry.OneOf(*sc.VolumeBindingMode, field.NewPath("volumeBindingMode"), storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer)...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				sc, o := obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
				var errs field.ErrorList
				if !registry.SemanticEqual(sc.Parameters, o.Parameters) {
					errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
				}
				if sc.Provisioner != o.Provisioner {
					errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
				}
				if !registry.SemanticEqual(sc.ReclaimPolicy, o.ReclaimPolicy) {
					errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
				}
				return append(errs, registry.ImmutableField(sc.VolumeBindingMode, o.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
			},
		},
	}
}
