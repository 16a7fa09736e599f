package registry

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

func nodesKind() *Kind {
	return &Kind{
		Names: Names{Version: "v1", Kind: "Node", ListKind: "NodeList", Plural: "nodes", Singular: "node",
			ShortNames: []string{"no"}},
		KeyRoot: "minions", // upstream's key
		New:     func() runtime.Object { return &corev1.Node{} },
		NewList: func() runtime.Object { return &corev1.NodeList{} },
		Status:  true,
		Strategy: Strategy{
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
			},
		},
	}
}
