package core

import (
	"strconv"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

func NodesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "Node", ListKind: "NodeList", Plural: "nodes", Singular: "node",
			ShortNames: []string{"no"}},
		KeyRoot: "minions", // upstream's key
		New:     func() runtime.Object { return &corev1.Node{} },
		NewList: func() runtime.Object { return &corev1.NodeList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(n, old *corev1.Node) { n.Status = old.Status }),
			// The node agent's status writes keep the spec; status.config (deprecated) only
			// stays where it was set already, as upstream.
			PrepareForStatusUpdate: registry.Rule(func(n, old *corev1.Node) {
				n.Spec = old.Spec
				if old.Status.Config == nil {
					n.Status.Config = nil
				}
			}),
			Default: func(obj runtime.Object) {
				n := obj.(*corev1.Node)
				// v1's podCIDR is the first of podCIDRs (upstream's conversion).
				if len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
					n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
				}
				if len(n.Spec.PodCIDRs) > 0 {
					n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
				}
				// Allocatable defaults to capacity (SetDefaults_NodeStatus).
				if n.Status.Allocatable == nil && n.Status.Capacity != nil {
					n.Status.Allocatable = n.Status.Capacity.DeepCopy()
				}
			},
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
			},
		},
	}
}
