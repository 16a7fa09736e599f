package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's scheduling constants (k8s.io/kubernetes/pkg/apis/scheduling).
const (
	highestUserDefinablePriority = 1000000000
	systemCriticalPriority       = 2 * highestUserDefinablePriority
	systemPriorityClassPrefix    = "system-"
)

// BootstrapPriorityClasses are the classes kube-apiserver creates at start.
func BootstrapPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: systemCriticalPriority + 1000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: systemCriticalPriority,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}

// isBootstrapPriorityClass reports whether pc is one of the bootstrap classes unchanged.
func isBootstrapPriorityClass(pc *schedulingv1.PriorityClass) bool {
	for _, b := range BootstrapPriorityClasses() {
		if b.Name == pc.Name {
			return b.Value == pc.Value
		}
	}
	return false
}

// A pod's priorityClassName becoming spec.priority is upstream's Priority admission plugin,
// not the registry's.
func PriorityClassesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", ListKind: "PriorityClassList", Plural: "priorityclasses",
			Singular: "priorityclass", ShortNames: []string{"pc"}},
		New:     func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList: func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy: registry.Strategy{
			// Upstream sets generation 1 on create and never bumps it (the class's value
			// is immutable).
			PrepareForCreate: func(obj runtime.Object) { obj.(*schedulingv1.PriorityClass).Generation = 1 },
			CheckDelete: func(_, name string) error {
				for _, b := range BootstrapPriorityClasses() {
					if b.Name == name {
						return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name, errors.New("this is a system priority class and cannot be deleted"))
					}
				}
				return nil
			},
			Default: func(obj runtime.Object) {
				registry.SetDefault(&obj.(*schedulingv1.PriorityClass).PreemptionPolicy, corev1.PreemptLowerPriority)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				pc := obj.(*schedulingv1.PriorityClass)
				var errs field.ErrorList
				if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
					if !isBootstrapPriorityClass(pc) {
						errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+
							fmt.Sprintf("%v is not a known system priority class", pc.Name)))
					}
				} else if pc.Value > highestUserDefinablePriority {
					errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
				}
				if pc.PreemptionPolicy != nil {
					errs = append(errs, registry.OneOf(*pc.PreemptionPolicy, field.NewPath("preemptionPolicy"), corev1.PreemptLowerPriority, corev1.PreemptNever)...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				pc, o := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
				var errs field.ErrorList
				if pc.Value != o.Value {
					errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
				}
				return append(errs, registry.ImmutableField(pc.PreemptionPolicy, o.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
			},
		},
	}
}
