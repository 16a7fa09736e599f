//go:build ignore

// Command rbac-golden writes kube-apiserver v1.37's bootstrap RBAC policy (the roles and
// bindings its storage post-start hook reconciles, with the default feature gates) as JSON,
// for pkg/apiserver/authz's golden test. It imports k8s.io/kubernetes, so it runs in a
// scratch module (see gen.sh), never as part of hacp.
package main

import (
	"encoding/json"
	"os"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

type policy struct {
	ClusterRoles          []rbacv1.ClusterRole            `json:"clusterRoles"`
	ClusterRoleBindings   []rbacv1.ClusterRoleBinding     `json:"clusterRoleBindings"`
	NamespaceRoles        map[string][]rbacv1.Role        `json:"namespaceRoles"`
	NamespaceRoleBindings map[string][]rbacv1.RoleBinding `json:"namespaceRoleBindings"`
}

func main() {
	p := policy{
		ClusterRoles:          append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...),
		ClusterRoleBindings:   append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...),
		NamespaceRoles:        bootstrappolicy.NamespaceRoles(),
		NamespaceRoleBindings: bootstrappolicy.NamespaceRoleBindings(),
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(p); err != nil {
		panic(err)
	}
}
