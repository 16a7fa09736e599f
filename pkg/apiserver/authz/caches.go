package authz

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// startCaches feeds the RBAC rules and the Node authorizer's graph from the shared
// informers and waits until each has handed over its first list.
func (z *Authz) startCaches(ctx context.Context) error {
	f := z.inf
	roles := informer.For[*rbacv1.Role](f, grRoles)
	clusterRoles := informer.For[*rbacv1.ClusterRole](f, grClusterRoles)
	roleBindings := informer.For[*rbacv1.RoleBinding](f, grRoleBindings)
	clusterRoleBindings := informer.For[*rbacv1.ClusterRoleBinding](f, grClusterRoleBindings)
	pods := informer.For[*corev1.Pod](f, grPods)
	pvs := informer.For[*corev1.PersistentVolume](f, grPVs)
	vas := informer.For[*storagev1.VolumeAttachment](f, grVAs)
	feed(roles, z.rbac.applyRole)
	feed(clusterRoles, z.rbac.applyClusterRole)
	feed(roleBindings, z.rbac.applyRoleBinding)
	feed(clusterRoleBindings, z.rbac.applyClusterRoleBinding)
	feed(pods, z.node.applyPod)
	feed(pvs, nameIndex(z.node, &z.node.pvClaims, pvClaim))
	feed(vas, nameIndex(z.node, &z.node.vaNodes, vaNode))
	for _, wait := range []func(context.Context) error{roles.WaitForSync, clusterRoles.WaitForSync, roleBindings.WaitForSync,
		clusterRoleBindings.WaitForSync, pods.WaitForSync, pvs.WaitForSync, vas.WaitForSync} {
		if err := wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// feed hands every change of inf to apply; deleted is true when the object is gone.
func feed[T runtime.Object](inf *informer.Informer[T], apply func(deleted bool, obj T)) {
	inf.AddHandler(informer.Handler[T]{
		OnAdd:    func(obj T) { apply(false, obj) },
		OnUpdate: func(_, obj T) { apply(false, obj) },
		OnDelete: func(obj T) { apply(true, obj) },
	})
}
