package registry

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// refuseStandardNamespaceDelete is upstream's NamespaceLifecycle admission rule: default,
// kube-system and kube-public may not be deleted.
func refuseStandardNamespaceDelete(_, name string) error {
	switch name {
	case metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic:
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

// finalizeNamespace is namespaces/{name}/finalize: it replaces spec.finalizers (the
// namespace controller removes "kubernetes" through it once the namespace is empty).
func finalizeNamespace(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	ns, req := current.(*corev1.Namespace), request.(*corev1.Namespace)
	ns.Spec.Finalizers = req.Spec.Finalizers
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		p := field.NewPath("spec", "finalizers").Index(i)
		if f == corev1.FinalizerKubernetes {
			continue
		}
		errs = append(errs, validateQualifiedName(string(f), p)...)
		if len(errs) == 0 && !containsSlash(string(f)) {
			errs = append(errs, field.Invalid(p, f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return ns, errs, nil
}

func containsSlash(s string) bool { return indexByte(s, '/') >= 0 }
