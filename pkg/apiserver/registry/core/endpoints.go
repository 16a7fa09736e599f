package core

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served (the issue asks for it)

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func EndpointsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "Endpoints", ListKind: "EndpointsList", Plural: "endpoints", Singular: "endpoints",
			ShortNames: []string{"ep"}, Namespaced: true},
		KeyRoot: "services/endpoints", // upstream's key
		New:     func() runtime.Object { return &corev1.Endpoints{} },
		NewList: func() runtime.Object { return &corev1.EndpointsList{} },
		Strategy: registry.Strategy{
			AllowCreateOnUpdate: true,
			// upstream's ValidateEndpoints: the subsets' addresses and ports; an update
			// may keep subsets stored under older rules as they are.
			ValidateNew: func(obj runtime.Object) field.ErrorList {
				return validateEndpoints(obj.(*corev1.Endpoints), nil)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateEndpoints(obj.(*corev1.Endpoints), old.(*corev1.Endpoints))
			},
			Default: func(obj runtime.Object) {
				for i := range obj.(*corev1.Endpoints).Subsets {
					ss := &obj.(*corev1.Endpoints).Subsets[i]
					for j := range ss.Ports {
						if ss.Ports[j].Protocol == "" {
							ss.Ports[j].Protocol = corev1.ProtocolTCP
						}
					}
				}
			},
		},
	}
}
