package controlplane

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// startNamespaceController follows the namespaces through the shared informer, as
// upstream's namespace and service account controllers do: a new namespace gets its
// "default" ServiceAccount, and one being deleted is emptied and finalized
// (terminateNamespace), whichever apiserver marked it. A relist (after the watch ended)
// hands every namespace over again, so a namespace seen while not watching is not missed.
func (r *Registry) startNamespaceController() {
	r.namespaces.AddHandler(informer.Handler[*corev1.Namespace]{
		OnAdd: func(ns *corev1.Namespace) {
			if ns.DeletionTimestamp == nil {
				r.ensureDefaultServiceAccount(r.ctx, ns.Name)
			}
			r.terminateIfDeleting(ns)
		},
		OnUpdate: func(old, ns *corev1.Namespace) {
			if old.ResourceVersion == ns.ResourceVersion && ns.DeletionTimestamp == nil {
				r.ensureDefaultServiceAccount(r.ctx, ns.Name) // a relist: as a new watch would
			}
			r.terminateIfDeleting(ns)
		},
	})
}

// terminateIfDeleting starts finishing ns when it is being deleted: whoever marked it may be
// gone, so every apiserver sees to it.
func (r *Registry) terminateIfDeleting(ns *corev1.Namespace) {
	if ns.DeletionTimestamp != nil {
		r.terminateNamespace(r.ctx, ns)
	}
}

// ensureDefaultServiceAccount does the job of upstream's service account
// controller: every active namespace has a "default" ServiceAccount.
func (r *Registry) ensureDefaultServiceAccount(ctx context.Context, ns string) {
	sa := r.byGR[schema.GroupResource{Resource: "serviceaccounts"}].Store
	if _, err := sa.Get(ctx, ns, "default", &metav1.GetOptions{ResourceVersion: "0"}); err == nil {
		return
	}
	_, err := sa.Create(ctx, ns, "", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, &metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		r.log.Warn("could not create the default service account", "namespace", ns, "err", err)
	}
}
