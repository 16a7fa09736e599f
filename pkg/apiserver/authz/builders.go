package authz

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Compact builders for the bootstrap policy, as upstream's rbacv1helpers: a rule's lists
// are sorted when it is built, as upstream's are.

type ruleBuilder struct{ r rbacv1.PolicyRule }

func newRule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{rbacv1.PolicyRule{Verbs: append([]string{}, verbs...)}}
}

func (b *ruleBuilder) Groups(g ...string) *ruleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

func (b *ruleBuilder) Resources(r ...string) *ruleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

func (b *ruleBuilder) Names(n ...string) *ruleBuilder {
	b.r.ResourceNames = append(b.r.ResourceNames, n...)
	return b
}

func (b *ruleBuilder) URLs(u ...string) *ruleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

func (b *ruleBuilder) rule() rbacv1.PolicyRule {
	for _, l := range [][]string{b.r.Resources, b.r.ResourceNames, b.r.APIGroups, b.r.NonResourceURLs, b.r.Verbs} {
		sort.Strings(l)
	}
	return b.r
}

type subjects []rbacv1.Subject

func (s *subjects) add(kind, group, ns string, names []string) {
	for _, n := range names {
		*s = append(*s, rbacv1.Subject{Kind: kind, APIGroup: group, Namespace: ns, Name: n})
	}
}

type bindingBuilder struct {
	name, ns string
	ref      rbacv1.RoleRef
	subjects subjects
}

func newClusterBinding(role string) *bindingBuilder {
	return &bindingBuilder{name: role, ref: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
}

func newRoleBinding(role, ns string) *bindingBuilder {
	return &bindingBuilder{name: role, ns: ns, ref: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}}
}

func (b *bindingBuilder) Groups(g ...string) *bindingBuilder {
	b.subjects.add(rbacv1.GroupKind, rbacv1.GroupName, "", g)
	return b
}

func (b *bindingBuilder) Users(u ...string) *bindingBuilder {
	b.subjects.add(rbacv1.UserKind, rbacv1.GroupName, "", u)
	return b
}

func (b *bindingBuilder) SAs(ns string, names ...string) *bindingBuilder {
	b.subjects.add(rbacv1.ServiceAccountKind, "", ns, names)
	return b
}

func (b *bindingBuilder) clusterBinding() rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name}, RoleRef: b.ref, Subjects: b.subjects}
}

func (b *bindingBuilder) roleBinding() rbacv1.RoleBinding {
	return rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.ns}, RoleRef: b.ref, Subjects: b.subjects}
}
