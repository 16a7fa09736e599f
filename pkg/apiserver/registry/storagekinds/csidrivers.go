package storagekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func CSIDriversKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver", ListKind: "CSIDriverList", Plural: "csidrivers",
			Singular: "csidriver"},
		New:     func() runtime.Object { return &storagev1.CSIDriver{} },
		NewList: func() runtime.Object { return &storagev1.CSIDriverList{} },
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				s := &obj.(*storagev1.CSIDriver).Spec
				registry.SetDefault(&s.AttachRequired, true)
				registry.SetDefault(&s.PodInfoOnMount, false)
				registry.SetDefault(&s.StorageCapacity, false)
				registry.SetDefault(&s.FSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
				if len(s.VolumeLifecycleModes) == 0 {
					s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
				}
				registry.SetDefault(&s.RequiresRepublish, false)
				registry.SetDefault(&s.SELinuxMount, false)
				registry.SetDefault(&s.PreventPodSchedulingIfMissing, false) // VolumeLimitScaling, on by default in 1.37
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				d := obj.(*storagev1.CSIDriver)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if len(d.Name) > 63 {
					errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), d.Name, 63))
				}
				if d.Spec.AttachRequired == nil {
					errs = append(errs, field.Required(p.Child("attachedRequired"), ""))
				}
				if d.Spec.PodInfoOnMount == nil {
					errs = append(errs, field.Required(p.Child("podInfoOnMount"), ""))
				}
				if d.Spec.FSGroupPolicy != nil {
					errs = append(errs, registry.OneOf(*d.Spec.FSGroupPolicy, p.Child("fsGroupPolicy"), storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)...)
				}
				for i, m := range d.Spec.VolumeLifecycleModes {
					errs = append(errs, registry.OneOf(m, p.Child("volumeLifecycleModes").Index(i), storagev1.VolumeLifecycleEphemeral, storagev1.VolumeLifecyclePersistent)...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				d, o := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
				p := field.NewPath("spec")
				var errs field.ErrorList
				errs = append(errs, registry.ImmutableField(d.Spec.AttachRequired, o.Spec.AttachRequired, p.Child("attachRequired"))...)
				errs = append(errs, registry.ImmutableField(d.Spec.FSGroupPolicy, o.Spec.FSGroupPolicy, p.Child("fsGroupPolicy"))...)
				return append(errs, registry.ImmutableField(d.Spec.VolumeLifecycleModes, o.Spec.VolumeLifecycleModes, p.Child("volumeLifecycleModes"))...)
			},
		},
	}
}
