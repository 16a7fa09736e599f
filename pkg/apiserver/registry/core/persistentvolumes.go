package core

import (
	"reflect"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}

// pvStatusUpdate keeps a volume's spec on a /status write and keeps
// status.lastPhaseTransitionTime current as upstream does: the stored time while the phase
// stays, now when the phase changes and the write did not set a time of its own.
func pvStatusUpdate(pv, old *corev1.PersistentVolume) {
	pv.Spec = old.Spec
	st, oldSt := &pv.Status, &old.Status
	switch {
	case st.Phase == oldSt.Phase && st.LastPhaseTransitionTime == nil:
		st.LastPhaseTransitionTime = oldSt.LastPhaseTransitionTime
	case st.Phase != oldSt.Phase && (st.LastPhaseTransitionTime == nil || st.LastPhaseTransitionTime.Equal(oldSt.LastPhaseTransitionTime)):
		now := metav1.Now()
		st.LastPhaseTransitionTime = &now
	}
}

func PersistentVolumesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "PersistentVolume", ListKind: "PersistentVolumeList", Plural: "persistentvolumes", Singular: "persistentvolume",
			ShortNames: []string{"pv"}},
		New:     func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList: func() runtime.Object { return &corev1.PersistentVolumeList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(pv, old *corev1.PersistentVolume) { pv.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(pvStatusUpdate),
			PrepareForCreate: func(obj runtime.Object) {
				now := metav1.Now()
				obj.(*corev1.PersistentVolume).Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
			},
			Default: func(obj runtime.Object) {
				pv := obj.(*corev1.PersistentVolume)
				if pv.Spec.PersistentVolumeReclaimPolicy == "" {
					pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
				}
				registry.SetDefault(&pv.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
				if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
					t := corev1.HostPathUnset
					hp.Type = &t
				}
				if pv.Status.Phase == "" {
					pv.Status.Phase = corev1.VolumePending
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				pv := obj.(*corev1.PersistentVolume)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if len(pv.Spec.AccessModes) == 0 {
					errs = append(errs, field.Required(p.Child("accessModes"), "must specify at least 1 access mode"))
				}
				for _, m := range pv.Spec.AccessModes {
					errs = append(errs, registry.OneOf(m, p.Child("accessModes"), accessModes...)...)
				}
				if len(pv.Spec.Capacity) == 0 {
					errs = append(errs, field.Required(p.Child("capacity"), ""))
				} else if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; !ok || len(pv.Spec.Capacity) != 1 {
					errs = append(errs, field.NotSupported(p.Child("capacity"), pv.Spec.Capacity, []string{string(corev1.ResourceStorage)}))
				} else {
					errs = append(errs, registry.ValidatePositiveQuantity(q, p.Child("capacity").Key(string(corev1.ResourceStorage)))...)
				}
				errs = append(errs, registry.OneOf(pv.Spec.PersistentVolumeReclaimPolicy, p.Child("persistentVolumeReclaimPolicy"),
					corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)...)
				if pv.Spec.VolumeMode != nil {
					errs = append(errs, registry.OneOf(*pv.Spec.VolumeMode, p.Child("volumeMode"), corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)...)
				}
				if pv.Spec.StorageClassName != "" {
					errs = append(errs, registry.ValidateDNS1123Subdomain(pv.Spec.StorageClassName, p.Child("storageClassName"))...)
				}
				errs = append(errs, validateVolumeSourceCount(pv.Spec.PersistentVolumeSource, p)...)
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				pv, oldPV := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
				var errs field.ErrorList
				if !registry.SemanticEqual(pv.Spec.PersistentVolumeSource, oldPV.Spec.PersistentVolumeSource) {
					errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
				}
				errs = append(errs, registry.ImmutableField(pv.Spec.VolumeMode, oldPV.Spec.VolumeMode, field.NewPath("volumeMode"))...)
				if oldPV.Spec.NodeAffinity != nil {
					errs = append(errs, registry.ImmutableField(pv.Spec.NodeAffinity, oldPV.Spec.NodeAffinity, field.NewPath("nodeAffinity"))...)
				}
				return errs
			},
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"name": obj.(*corev1.PersistentVolume).Name}
			},
		},
	}
}

// validateVolumeSourceCount checks that exactly one volume source is set, as upstream:
// "must specify a volume type", "may not specify more than 1 volume type".
func validateVolumeSourceCount(src corev1.PersistentVolumeSource, p *field.Path) field.ErrorList {
	v := reflect.ValueOf(src)
	t := v.Type()
	set := 0
	var errs field.ErrorList
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsNil() {
			continue
		}
		set++
		if set > 1 {
			errs = append(errs, field.Forbidden(p.Child(jsonName(t.Field(i))), "may not specify more than 1 volume type"))
		}
	}
	if set == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

// jsonName is the JSON name of a struct field.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	return tag
}
