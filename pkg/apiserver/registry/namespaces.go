package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

func namespacesKind() *Kind {
	return &Kind{
		Names: Names{Version: "v1", Kind: "Namespace", ListKind: "NamespaceList", Plural: "namespaces", Singular: "namespace",
			ShortNames: []string{"ns"}},
		New:     func() runtime.Object { return &corev1.Namespace{} },
		NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		Status:  true,
		Strategy: Strategy{
			NameValidation: apivalidation.ValidateNamespaceName,
			PrepareForCreate: func(obj runtime.Object) {
				ns := obj.(*corev1.Namespace)
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
			},
			Default: func(obj runtime.Object) {
				ns := obj.(*corev1.Namespace)
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels[corev1.LabelMetadataName] = ns.Name
			},
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
