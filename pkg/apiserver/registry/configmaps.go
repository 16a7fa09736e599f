package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func configMapsKind() *Kind {
	return &Kind{
		Names: Names{Version: "v1", Kind: "ConfigMap", ListKind: "ConfigMapList", Plural: "configmaps", Singular: "configmap",
			ShortNames: []string{"cm"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.ConfigMap{} },
		NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				cm := obj.(*corev1.ConfigMap)
				var keys []string
				var errs field.ErrorList
				for k := range cm.Data {
					keys = append(keys, k)
				}
				errs = append(errs, validateDataKeys(keys, field.NewPath("data"))...)
				keys = keys[:0]
				for k := range cm.BinaryData {
					keys = append(keys, k)
					if _, dup := cm.Data[k]; dup {
						errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
					}
				}
				return append(errs, validateDataKeys(keys, field.NewPath("binaryData"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
				if oldCM.Immutable != nil && *oldCM.Immutable {
					if cm.Immutable == nil || !*cm.Immutable {
						return field.ErrorList{field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set")}
					}
					return append(immutable(cm.Data, oldCM.Data, field.NewPath("data")), immutable(cm.BinaryData, oldCM.BinaryData, field.NewPath("binaryData"))...)
				}
				return nil
			},
		},
	}
}
