package core

import (
	"slices"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

func NamespacesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "Namespace", ListKind: "NamespaceList", Plural: "namespaces", Singular: "namespace",
			ShortNames: []string{"ns"}},
		New:     func() runtime.Object { return &corev1.Namespace{} },
		NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		Status:  true,
		Strategy: registry.Strategy{
			NameValidation: apivalidation.ValidateNamespaceName,
			PrepareForCreate: func(obj runtime.Object) {
				// As upstream: the finalizers asked for, and always "kubernetes" (the
				// namespace cleanup removes it once the namespace is empty).
				ns := obj.(*corev1.Namespace)
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
			},
			// spec.finalizers change through namespaces/finalize only, as upstream.
			PrepareForUpdate: registry.Rule(func(ns, old *corev1.Namespace) {
				ns.Spec.Finalizers = old.Spec.Finalizers
				ns.Status = old.Status
			}),
			PrepareForStatusUpdate: registry.Rule(func(ns, old *corev1.Namespace) { ns.Spec = old.Spec }),
			Validate:               validateNamespaceSpec,
			DeletionHeld: func(obj runtime.Object) bool {
				return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0
			},
			Default: defaultNamespace,
			MarkDeleting: func(obj runtime.Object) {
				obj.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating
			},
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
			},
			CheckDelete: refuseStandardNamespaceDelete,
		},
	}
}

// defaultNamespace labels a namespace with its name (kubernetes.io/metadata.name), as
// upstream's defaults.
func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}
