package authz

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/request"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkRBACAuthorize is one authorization decision with the bootstrap policy and 1000
// rolebindings of other users in the namespace: what RBAC adds to a request.
func BenchmarkRBACAuthorize(b *testing.B) {
	r := newRBAC()
	p := BootstrapPolicy()
	var crs []*rbacv1.ClusterRole
	var crbs []*rbacv1.ClusterRoleBinding
	var rbs []*rbacv1.RoleBinding
	for i := range p.ClusterRoles {
		cr := p.ClusterRoles[i]
		if cr.Name == "edit" {
			cr.Rules = append(editRules(), viewRules()...) // what aggregation gives it
		}
		crs = append(crs, &cr)
	}
	for i := range p.ClusterRoleBindings {
		crbs = append(crbs, &p.ClusterRoleBindings[i])
	}
	for i := range 1000 {
		rbs = append(rbs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i), Namespace: "ns"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: fmt.Sprintf("u%d", i)}}})
	}
	rbs = append(rbs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "ns"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "team"}}})
	for _, cr := range crs {
		r.applyClusterRole(false, cr)
	}
	for _, crb := range crbs {
		r.applyClusterRoleBinding(false, crb)
	}
	for _, rb := range rbs {
		r.applyRoleBinding(false, rb)
	}
	u := &request.User{Name: "alice", Groups: []string{"team", request.AllAuthenticated}}
	z := Union{privileged, newNode(), r}
	for _, tc := range []struct {
		name string
		a    Attributes
		want Decision
	}{
		{"allowed get configmap", Attributes{User: u, Verb: "get", ResourceRequest: true, Resource: "configmaps", Namespace: "ns", Name: "x"}, Allow},
		{"forbidden list secrets elsewhere", Attributes{User: u, Verb: "list", ResourceRequest: true, Resource: "secrets", Namespace: "other"}, NoOpinion},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if d, _, _ := z.Authorize(context.Background(), tc.a); d != tc.want {
					b.Fatalf("decision %v, want %v", d, tc.want)
				}
			}
		})
	}
}
