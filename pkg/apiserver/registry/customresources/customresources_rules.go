package customresources

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The update rules of custom resources, as upstream's customresource strategies: a custom
// object has no typed spec, so everything at its top level but metadata (and status, with
// the status subresource on) is its spec.

// keepCustomStatus is the main-resource update rule with the status subresource on: the
// stored object's status stays (none if it has none).
func keepCustomStatus(obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if status, ok := o.Object["status"]; ok {
		u.Object["status"] = status
	} else {
		delete(u.Object, "status")
	}
}

// takeCustomStatus is the /status update rule: the write changes status only; everything
// else, metadata too, is the stored object's, managedFields aside (the field manager's
// record of this write).
func takeCustomStatus(obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	status, ok := u.Object["status"]
	managed := u.GetManagedFields()
	u.Object = o.Object
	if ok {
		u.Object["status"] = status
	} else {
		delete(u.Object, "status")
	}
	u.SetManagedFields(managed)
}

// customSpecChanged returns the SpecChanged rule of a custom resource: any change outside
// metadata starts a new generation; with the status subresource on, status changes do
// not (a main-resource write keeps the stored status, though defaults may fill it).
func customSpecChanged(statusSubresource bool) func(obj, old runtime.Object) bool {
	return func(obj, old runtime.Object) bool {
		a, b := obj.(*unstructured.Unstructured).Object, old.(*unstructured.Unstructured).Object
		for key, av := range a {
			if ignoredForGeneration(key, statusSubresource) {
				continue
			}
			if bv, ok := b[key]; !ok || !apiequality.Semantic.DeepEqual(av, bv) {
				return true
			}
		}
		for key := range b {
			if _, ok := a[key]; !ok && !ignoredForGeneration(key, statusSubresource) {
				return true
			}
		}
		return false
	}
}

// ignoredForGeneration reports whether a custom object's top-level field key stays out of
// the generation's comparison.
func ignoredForGeneration(key string, statusSubresource bool) bool {
	switch key {
	case "metadata", "apiVersion", "kind":
		return true
	case "status":
		return statusSubresource
	}
	return false
}
