// Ported from Kubernetes v1.37.2, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy_namespaces.go
// (Copyright The Kubernetes Authors, Apache License 2.0): the same rule builders with the
// feature gates resolved to their v1.37 defaults (policy_gates.go).

package authz

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	// nsRoles is a map of namespace to slice of roles to create
	nsRoles = map[string][]rbacv1.Role{}

	// nsRoleBindings is a map of namespace to slice of roleBindings to create
	nsRoleBindings = map[string][]rbacv1.RoleBinding{}
)

func addNamespaceRole(namespace string, role rbacv1.Role) {
	if !strings.HasPrefix(namespace, "kube-") {
		panicf(`roles can only be bootstrapped into reserved namespaces starting with "kube-", not %q`, namespace)
	}

	existingRoles := nsRoles[namespace]
	for _, existingRole := range existingRoles {
		if role.Name == existingRole.Name {
			panicf("role %q was already registered in %q", role.Name, namespace)
		}
	}

	role.Namespace = namespace
	addDefaultMetadata(&role)
	existingRoles = append(existingRoles, role)
	nsRoles[namespace] = existingRoles
}

func addNamespaceRoleBinding(namespace string, roleBinding rbacv1.RoleBinding) {
	if !strings.HasPrefix(namespace, "kube-") {
		panicf(`rolebindings can only be bootstrapped into reserved namespaces starting with "kube-", not %q`, namespace)
	}

	existingRoleBindings := nsRoleBindings[namespace]
	for _, existingRoleBinding := range existingRoleBindings {
		if roleBinding.Name == existingRoleBinding.Name {
			panicf("rolebinding %q was already registered in %q", roleBinding.Name, namespace)
		}
	}

	roleBinding.Namespace = namespace
	addDefaultMetadata(&roleBinding)
	existingRoleBindings = append(existingRoleBindings, roleBinding)
	nsRoleBindings[namespace] = existingRoleBindings
}

func init() {
	addNamespaceRole(metav1.NamespaceSystem, rbacv1.Role{
		// role for finding authentication config info for starting a server
		ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication-reader"},
		Rules: []rbacv1.PolicyRule{
			// this particular config map is exposed and contains authentication configuration information
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("configmaps").Names("extension-apiserver-authentication").rule(),
		},
	})
	addNamespaceRole(metav1.NamespaceSystem, rbacv1.Role{
		// role for the bootstrap signer to be able to inspect kube-system secrets
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "bootstrap-signer"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("secrets").rule(),
		},
	})
	addNamespaceRole(metav1.NamespaceSystem, rbacv1.Role{
		// role for the cloud providers to access/create kube-system configmaps
		// Deprecated starting Kubernetes 1.10 and will be deleted according to GA deprecation policy.
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "cloud-provider"},
		Rules: []rbacv1.PolicyRule{
			newRule("create", "get", "list", "watch").Groups(legacyGroup).Resources("configmaps").rule(),
		},
	})
	addNamespaceRole(metav1.NamespaceSystem, rbacv1.Role{
		// role for the token-cleaner to be able to remove secrets, but only in kube-system
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "token-cleaner"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "delete").Groups(legacyGroup).Resources("secrets").rule(),
			eventsRule(),
		},
	})
	// TODO: Create util on Role+Binding for leader locking if more cases evolve.
	addNamespaceRole(metav1.NamespaceSystem, rbacv1.Role{
		// role for the leader locking on supplied lease
		ObjectMeta: metav1.ObjectMeta{Name: "system::leader-locking-kube-controller-manager"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "watch", "list", "create", "update").Groups("coordination.k8s.io").Resources("leases").rule(),
			newRule("get", "watch", "list", "create", "update").Groups("coordination.k8s.io").Resources("leasecandidates").rule(),
		},
	})
	addNamespaceRole(metav1.NamespaceSystem, rbacv1.Role{
		// role for the leader locking on supplied lease
		ObjectMeta: metav1.ObjectMeta{Name: "system::leader-locking-kube-scheduler"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "watch", "list", "create", "update").Groups("coordination.k8s.io").Resources("leases").rule(),
			newRule("get", "watch", "list", "create", "update").Groups("coordination.k8s.io").Resources("leasecandidates").rule(),
		},
	})

	delegatedAuthBinding := newRoleBinding("extension-apiserver-authentication-reader", metav1.NamespaceSystem).Users(userKubeControllerManager, userKubeScheduler).roleBinding()
	delegatedAuthBinding.Name = "system::extension-apiserver-authentication-reader"
	addNamespaceRoleBinding(metav1.NamespaceSystem, delegatedAuthBinding)

	// E1201 20:39:34.550004 1182102 controller.go:231] leases.coordination.k8s.io is forbidden: User "system:serviceaccount:kube-system:leader-election-controller" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"
	addNamespaceRoleBinding(metav1.NamespaceSystem,
		newRoleBinding("system::leader-locking-kube-controller-manager", metav1.NamespaceSystem).Users(userKubeControllerManager).SAs(metav1.NamespaceSystem, "kube-controller-manager", "leader-election-controller").roleBinding())
	addNamespaceRoleBinding(metav1.NamespaceSystem,
		newRoleBinding("system::leader-locking-kube-scheduler", metav1.NamespaceSystem).Users(userKubeScheduler).SAs(metav1.NamespaceSystem, "kube-scheduler").roleBinding())
	addNamespaceRoleBinding(metav1.NamespaceSystem,
		newRoleBinding(saRolePrefix+"bootstrap-signer", metav1.NamespaceSystem).SAs(metav1.NamespaceSystem, "bootstrap-signer").roleBinding())
	// cloud-provider is deprecated starting Kubernetes 1.10 and will be deleted according to GA deprecation policy.
	addNamespaceRoleBinding(metav1.NamespaceSystem,
		newRoleBinding(saRolePrefix+"cloud-provider", metav1.NamespaceSystem).SAs(metav1.NamespaceSystem, "cloud-provider").roleBinding())
	addNamespaceRoleBinding(metav1.NamespaceSystem,
		newRoleBinding(saRolePrefix+"token-cleaner", metav1.NamespaceSystem).SAs(metav1.NamespaceSystem, "token-cleaner").roleBinding())

	addNamespaceRole(metav1.NamespacePublic, rbacv1.Role{
		// role for the bootstrap signer to be able to write its configmap
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "bootstrap-signer"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("configmaps").rule(),
			newRule("update").Groups(legacyGroup).Resources("configmaps").Names("cluster-info").rule(),
			eventsRule(),
		},
	})
	addNamespaceRoleBinding(metav1.NamespacePublic,
		newRoleBinding(saRolePrefix+"bootstrap-signer", metav1.NamespacePublic).SAs(metav1.NamespaceSystem, "bootstrap-signer").roleBinding())

}
