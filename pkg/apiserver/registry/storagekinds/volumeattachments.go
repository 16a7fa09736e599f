package storagekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func VolumeAttachmentsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttachment", ListKind: "VolumeAttachmentList", Plural: "volumeattachments",
			Singular: "volumeattachment"},
		New:     func() runtime.Object { return &storagev1.VolumeAttachment{} },
		NewList: func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(va, old *storagev1.VolumeAttachment) { va.Status = old.Status }),
			// The attacher's status writes change status only (upstream resets metadata as
			// for any status write, managedFields aside).
			PrepareForStatusUpdate: registry.Rule(func(va, old *storagev1.VolumeAttachment) {
				va.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&va.ObjectMeta, &old.ObjectMeta)
			}),
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				va := obj.(*storagev1.VolumeAttachment)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if va.Spec.Attacher == "" {
					errs = append(errs, field.Required(p.Child("attacher"), ""))
				} else {
					errs = append(errs, registry.ValidateDNS1123Subdomain(va.Spec.Attacher, p.Child("attacher"))...)
				}
				if va.Spec.NodeName == "" {
					errs = append(errs, field.Required(p.Child("nodeName"), ""))
				} else {
					errs = append(errs, registry.ValidateDNS1123Subdomain(va.Spec.NodeName, p.Child("nodeName"))...)
				}
				src := va.Spec.Source
				switch {
				case src.PersistentVolumeName == nil && src.InlineVolumeSpec == nil:
					errs = append(errs, field.Required(p.Child("source"), "must specify exactly one of persistentVolumeName and inlineVolumeSpec"))
				case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
					errs = append(errs, field.Forbidden(p.Child("source"), "must specify exactly one of persistentVolumeName and inlineVolumeSpec"))
				case src.PersistentVolumeName != nil && *src.PersistentVolumeName == "":
					errs = append(errs, field.Required(p.Child("source", "persistentVolumeName"), "must specify non empty persistentVolumeName"))
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				// upstream: spec is immutable ("field is immutable" on spec).
				return registry.ImmutableField(obj.(*storagev1.VolumeAttachment).Spec, old.(*storagev1.VolumeAttachment).Spec, field.NewPath("spec"))
			},
		},
	}
}
