package registry

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The update rules of a kind (upstream's strategies' PrepareForUpdate and their status
// strategies' PrepareForUpdate) are written in the kind's own file as typed functions:
//
//	PrepareForUpdate:       registry.Rule(func(obj, old *appsv1.ReplicaSet) { obj.Status = old.Status }),
//	PrepareForStatusUpdate: registry.Rule(func(obj, old *appsv1.ReplicaSet) { obj.Spec = old.Spec }),
//	SpecChanged:            registry.Changed(func(rs *appsv1.ReplicaSet) appsv1.ReplicaSetSpec { return rs.Spec }),

// Rule adapts a rule written for kind T's objects to a Strategy's PrepareForUpdate or
// PrepareForStatusUpdate: fn changes obj, the object about to be written, given old, the
// stored one.
func Rule[T runtime.Object](fn func(obj, old T)) func(obj, old runtime.Object) {
	return func(obj, old runtime.Object) { fn(obj.(T), old.(T)) }
}

// Changed returns a Strategy.SpecChanged that reports whether part (a kind's spec) of two
// objects of kind T differs, compared as upstream compares them (apiequality.Semantic).
func Changed[T runtime.Object, P any](part func(T) P) func(obj, old runtime.Object) bool {
	return func(obj, old runtime.Object) bool {
		return !apiequality.Semantic.DeepEqual(part(obj.(T)), part(old.(T)))
	}
}

// KeepMetadata sets obj's metadata to old's, all but managedFields (the field manager's
// record of this write): the /status rule of the kinds whose status writes may change
// nothing but status (FlowSchemas, PriorityLevelConfigurations).
func KeepMetadata(obj, old *metav1.ObjectMeta) {
	managed := obj.ManagedFields
	*obj = *old
	obj.ManagedFields = managed
}
