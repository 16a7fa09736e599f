package authz

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RBAC's escalation prevention, as upstream's policybased storages: a caller may write a
// role only with rules it holds itself (or with the escalate verb on it), and a binding only
// to a role whose rules it holds (or with the bind verb on it). system:masters and the
// apiserver's own calls (no user) are exempt.

// fullAuthority is what setting an aggregationRule requires.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

func exempt(u *request.User) bool {
	return u == nil || hasString(u.Groups, request.SystemPrivilegedGrp)
}

func (z *Authz) allowed(ctx context.Context, u *request.User, verb, resource, ns, name string) bool {
	d, _, _ := z.Authorize(ctx, Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "v1",
		Resource: resource, Namespace: ns, Name: name})
	return d == Allow
}

// confirmNoEscalation is upstream's ConfirmNoEscalation.
func (z *Authz) confirmNoEscalation(u *request.User, ns string, rules []rbacv1.PolicyRule) error {
	ok, missing := covers(z.rbac.RulesFor(u, ns), rules)
	if ok {
		return nil
	}
	var lines []string
	seen := map[string]bool{}
	for _, m := range compactRules(missing) {
		s := compactString(m)
		if !seen[s] {
			seen[s] = true
			lines = append(lines, s)
		}
	}
	sort.Strings(lines)
	return fmt.Errorf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
}

func (z *Authz) admitRole(ctx context.Context, obj, old runtime.Object) error {
	u := userOf(ctx)
	r := obj.(*rbacv1.Role)
	if exempt(u) || onlyGCFields(obj, old) || z.allowed(ctx, u, "escalate", "roles", r.Namespace, r.Name) {
		return nil
	}
	if err := z.confirmNoEscalation(u, r.Namespace, r.Rules); err != nil {
		return apierrors.NewForbidden(grRoles, r.Name, err)
	}
	return nil
}

func (z *Authz) admitClusterRole(ctx context.Context, obj, old runtime.Object) error {
	u := userOf(ctx)
	cr := obj.(*rbacv1.ClusterRole)
	if exempt(u) || onlyGCFields(obj, old) || z.allowed(ctx, u, "escalate", "clusterroles", "", cr.Name) {
		return nil
	}
	if cr.AggregationRule != nil {
		// Aggregated rules are the controller's to write; the aggregation rule itself can gather anything.
		if err := z.confirmNoEscalation(u, "", fullAuthority); err != nil {
			return apierrors.NewForbidden(grClusterRoles, cr.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
		return nil
	}
	if err := z.confirmNoEscalation(u, "", cr.Rules); err != nil {
		return apierrors.NewForbidden(grClusterRoles, cr.Name, err)
	}
	return nil
}

func (z *Authz) admitBinding(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object, name, ns string, ref rbacv1.RoleRef) error {
	u := userOf(ctx)
	if exempt(u) || onlyGCFields(obj, old) {
		return nil
	}
	resource := "clusterroles"
	if ref.Kind == "Role" {
		resource = "roles"
	}
	if z.allowed(ctx, u, "bind", resource, ns, ref.Name) {
		return nil
	}
	rules, err := z.rbac.RefRules(ref, ns)
	if err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if err := z.confirmNoEscalation(u, ns, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

func (z *Authz) admitRoleBinding(ctx context.Context, obj, old runtime.Object) error {
	b := obj.(*rbacv1.RoleBinding)
	return z.admitBinding(ctx, grRoleBindings, obj, old, b.Name, b.Namespace, b.RoleRef)
}

func (z *Authz) admitClusterRoleBinding(ctx context.Context, obj, old runtime.Object) error {
	b := obj.(*rbacv1.ClusterRoleBinding)
	return z.admitBinding(ctx, grClusterRoleBindings, obj, old, b.Name, "", b.RoleRef)
}

// onlyGCFields is upstream's IsOnlyMutatingGCFields: an update that changes nothing but
// owner references and finalizers (what the garbage collector writes) needs no check.
func onlyGCFields(obj, old runtime.Object) bool {
	if old == nil {
		return false
	}
	cp := old.DeepCopyObject()
	ca, err1 := meta.Accessor(cp)
	na, err2 := meta.Accessor(obj)
	if err1 != nil || err2 != nil {
		return false
	}
	ca.SetOwnerReferences(na.GetOwnerReferences())
	ca.SetFinalizers(na.GetFinalizers())
	ca.SetManagedFields(na.GetManagedFields())
	cp.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return apiequality.Semantic.DeepEqual(cp, obj)
}
