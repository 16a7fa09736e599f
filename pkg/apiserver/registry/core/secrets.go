package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func SecretsKind() *registry.Kind {
	return &registry.Kind{
		Names:   registry.Names{Version: "v1", Kind: "Secret", ListKind: "SecretList", Plural: "secrets", Singular: "secret", Namespaced: true},
		New:     func() runtime.Object { return &corev1.Secret{} },
		NewList: func() runtime.Object { return &corev1.SecretList{} },
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				s := obj.(*corev1.Secret)
				if s.Type == "" {
					s.Type = corev1.SecretTypeOpaque
				}
				// stringData is write-only: fold it into data.
				for k, v := range s.StringData {
					if s.Data == nil {
						s.Data = map[string][]byte{}
					}
					s.Data[k] = []byte(v)
				}
				s.StringData = nil
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				var keys []string
				size := 0
				for k, v := range obj.(*corev1.Secret).Data {
					keys = append(keys, k)
					size += len(v)
				}
				return append(registry.ValidateDataKeys(keys, field.NewPath("data")), registry.ValidateDataSize(size, field.NewPath("data"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.Immutable(obj.(*corev1.Secret).Type, old.(*corev1.Secret).Type, field.NewPath("type"))
			},
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
			},
		},
	}
}
