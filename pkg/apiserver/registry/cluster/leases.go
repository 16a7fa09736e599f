// Package cluster holds the kinds of the small groups that serve the cluster itself: coordination
// (leases), scheduling (priority classes), node (runtime classes), flowcontrol (flow
// schemas, priority level configurations), certificates (certificate signing requests) and
// apiregistration (API services).
// Each kind is one file whose XxxKind function the controlplane lists.
package cluster

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func LeasesKind() *registry.Kind {
	return &registry.Kind{
		Names:   registry.Names{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", ListKind: "LeaseList", Plural: "leases", Singular: "lease", Namespaced: true},
		New:     func() runtime.Object { return &coordinationv1.Lease{} },
		NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy: registry.Strategy{
			// upstream: PUT creates missing Leases.
			AllowCreateOnUpdate: true,
			Validate: func(obj runtime.Object) field.ErrorList {
				l := obj.(*coordinationv1.Lease)
				if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
					return field.ErrorList{field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), *d, "must be greater than 0")}
				}
				return nil
			},
		},
	}
}
