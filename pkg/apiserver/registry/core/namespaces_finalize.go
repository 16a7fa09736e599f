package core

import (
	"errors"

	"github.com/hacp/hacp/pkg/apiserver/registry"
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

// FinalizeNamespace is namespaces/{name}/finalize: it replaces spec.finalizers (the
// namespace cleanup removes "kubernetes" through it once the namespace is empty; whoever
// added another removes theirs). As upstream's finalize strategy, the request's metadata
// (labels, annotations, finalizers, owner references) is taken too and only status is kept.
// The store deletes a namespace being deleted once both its spec.finalizers and its
// metadata.finalizers are empty.
func FinalizeNamespace(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	ns, req := current.(*corev1.Namespace), request.(*corev1.Namespace)
	ns.Spec.Finalizers = req.Spec.Finalizers
	ns.Labels, ns.Annotations = req.Labels, req.Annotations
	ns.Finalizers, ns.OwnerReferences = req.Finalizers, req.OwnerReferences
	defaultNamespace(ns)
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateNamespaceFinalizer(f, field.NewPath("spec", "finalizers").Index(i))...)
	}
	return ns, errs, nil
}

// validateNamespaceSpec is upstream's ValidateNamespace beyond metadata: every
// spec.finalizers entry is "kubernetes" or a qualified name with a domain (upstream
// reports them at spec.finalizers, without an index).
func validateNamespaceSpec(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	for _, f := range obj.(*corev1.Namespace).Spec.Finalizers {
		errs = append(errs, validateNamespaceFinalizer(f, field.NewPath("spec", "finalizers"))...)
	}
	return errs
}

// validateNamespaceFinalizer is upstream's validateFinalizerName for one spec.finalizers entry.
func validateNamespaceFinalizer(f corev1.FinalizerName, p *field.Path) field.ErrorList {
	if f == corev1.FinalizerKubernetes {
		return nil
	}
	if errs := registry.ValidateQualifiedName(string(f), p); len(errs) > 0 {
		return errs
	}
	if !containsSlash(string(f)) {
		return field.ErrorList{field.Invalid(p, f, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

func containsSlash(s string) bool { return indexByte(s, '/') >= 0 }
