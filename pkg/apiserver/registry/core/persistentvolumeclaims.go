package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func PersistentVolumeClaimsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "PersistentVolumeClaim", ListKind: "PersistentVolumeClaimList", Plural: "persistentvolumeclaims",
			Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Spec = old.Spec }),
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
			},
			Default: func(obj runtime.Object) {
				pvc := obj.(*corev1.PersistentVolumeClaim)
				registry.SetDefault(&pvc.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
				if pvc.Status.Phase == "" {
					pvc.Status.Phase = corev1.ClaimPending
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				pvc := obj.(*corev1.PersistentVolumeClaim)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if len(pvc.Spec.AccessModes) == 0 {
					errs = append(errs, field.Required(p.Child("accessModes"), "at least 1 access mode is required"))
				}
				for _, m := range pvc.Spec.AccessModes {
					errs = append(errs, registry.OneOf(m, p.Child("accessModes"), accessModes...)...)
				}
				if pvc.Spec.Selector != nil {
					errs = append(errs, registry.ValidateSelector(pvc.Spec.Selector, p.Child("selector"))...)
				}
				// Upstream's path for the storage request is spec.resources[storage].
				if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
					errs = append(errs, field.Required(p.Child("resources").Key(string(corev1.ResourceStorage)), ""))
				} else {
					errs = append(errs, registry.ValidatePositiveQuantity(q, p.Child("resources").Key(string(corev1.ResourceStorage)))...)
				}
				if sc := pvc.Spec.StorageClassName; sc != nil && *sc != "" {
					errs = append(errs, registry.ValidateDNS1123Subdomain(*sc, p.Child("storageClassName"))...)
				}
				if pvc.Spec.VolumeMode != nil {
					errs = append(errs, registry.OneOf(*pvc.Spec.VolumeMode, p.Child("volumeMode"), corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				pvc, oldPVC := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
				newSpec, oldSpec := pvc.Spec.DeepCopy(), oldPVC.Spec.DeepCopy()
				if oldSpec.VolumeName == "" {
					oldSpec.VolumeName = newSpec.VolumeName // bound once by the PV controller
				}
				// A bound claim may grow (resources.requests) and change its volume attributes class.
				if pvc.Status.Phase == corev1.ClaimBound {
					newSpec.Resources.Requests = oldSpec.Resources.Requests
					newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
				}
				var errs field.ErrorList
				if !registry.SemanticEqual(*newSpec, *oldSpec) {
					errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
				}
				newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
				if newSize.Cmp(oldSize) < 0 {
					statusSize := oldPVC.Status.Capacity[corev1.ResourceStorage]
					if newSize.Cmp(statusSize) <= 0 {
						errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
					}
				}
				return errs
			},
		},
	}
}
