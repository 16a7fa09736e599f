package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ConfigMapsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "ConfigMap", ListKind: "ConfigMapList", Plural: "configmaps", Singular: "configmap",
			ShortNames: []string{"cm"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.ConfigMap{} },
		NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				cm := obj.(*corev1.ConfigMap)
				var keys []string
				var errs field.ErrorList
				for k := range cm.Data {
					keys = append(keys, k)
				}
				errs = append(errs, registry.ValidateDataKeys(keys, field.NewPath("data"))...)
				keys = keys[:0]
				for k := range cm.BinaryData {
					keys = append(keys, k)
					if _, dup := cm.Data[k]; dup {
						errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
					}
				}
				errs = append(errs, registry.ValidateDataKeys(keys, field.NewPath("binaryData"))...)
				// The whole object is meant: upstream reports the empty path.
				return append(errs, registry.ValidateDataSize(configMapSize(cm), field.NewPath(""))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
				if oldCM.Immutable != nil && *oldCM.Immutable {
					if cm.Immutable == nil || !*cm.Immutable {
						return field.ErrorList{field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set")}
					}
					return append(registry.Immutable(cm.Data, oldCM.Data, field.NewPath("data")), registry.Immutable(cm.BinaryData, oldCM.BinaryData, field.NewPath("binaryData"))...)
				}
				return nil
			},
		},
	}
}

// configMapSize is what upstream counts against the 1 MiB limit: the values of data and
// binaryData.
func configMapSize(cm *corev1.ConfigMap) int {
	n := 0
	for _, v := range cm.Data {
		n += len(v)
	}
	for _, v := range cm.BinaryData {
		n += len(v)
	}
	return n
}
