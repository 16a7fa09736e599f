package authz

import (
	"context"
	"fmt"
	"sort"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Policy is kube-apiserver v1.33's bootstrap RBAC policy (ported in policy*.go).
type Policy struct {
	ClusterRoles          []rbacv1.ClusterRole
	ClusterRoleBindings   []rbacv1.ClusterRoleBinding
	NamespaceRoles        map[string][]rbacv1.Role
	NamespaceRoleBindings map[string][]rbacv1.RoleBinding
}

// BootstrapPolicy returns the policy the apiserver creates and reconciles at start, as
// upstream's rbac storage post-start hook: the cluster roles and bindings, the controller
// roles and bindings, and the roles and bindings in kube-system and kube-public.
func BootstrapPolicy() Policy {
	return Policy{
		ClusterRoles:          append(bootstrapClusterRoles(), controllerRoles()...),
		ClusterRoleBindings:   append(bootstrapClusterRoleBindings(), controllerRoleBindings()...),
		NamespaceRoles:        nsRoles,
		NamespaceRoleBindings: nsRoleBindings,
	}
}

// reconcileBootstrap creates what is missing of the bootstrap policy and, unless an object
// is annotated rbac.authorization.kubernetes.io/autoupdate: "false", adds what it lacks
// (rules, aggregation selectors, subjects, labels and annotations), as upstream's
// reconciliation with confirm set; a binding whose roleRef differs is recreated. Extra
// rules and subjects are kept. Every apiserver does it; the writes are idempotent.
func (z *Authz) reconcileBootstrap(ctx context.Context) error {
	p := BootstrapPolicy()
	for i := range p.ClusterRoles {
		want := p.ClusterRoles[i].DeepCopy()
		if err := z.reconcile(ctx, grClusterRoles, "", want, func(cur runtime.Object) (runtime.Object, bool) {
			c := cur.(*rbacv1.ClusterRole).DeepCopy()
			changed := mergeMeta(&c.ObjectMeta, &want.ObjectMeta)
			if want.AggregationRule != nil {
				if c.AggregationRule == nil {
					c.AggregationRule = &rbacv1.AggregationRule{}
				}
				for _, sel := range want.AggregationRule.ClusterRoleSelectors {
					if !containsSelector(c.AggregationRule.ClusterRoleSelectors, sel) {
						c.AggregationRule.ClusterRoleSelectors = append(c.AggregationRule.ClusterRoleSelectors, sel)
						changed = true
					}
				}
				return c, changed // the rules are the aggregation's
			}
			if ok, missing := covers(c.Rules, want.Rules); !ok {
				c.Rules = append(c.Rules, missing...)
				changed = true
			}
			return c, changed
		}); err != nil {
			return err
		}
	}
	for i := range p.ClusterRoleBindings {
		want := p.ClusterRoleBindings[i].DeepCopy()
		if err := z.reconcileBinding(ctx, grClusterRoleBindings, "", want, &want.ObjectMeta, want.RoleRef, want.Subjects); err != nil {
			return err
		}
	}
	for _, ns := range sortedKeys(p.NamespaceRoles) {
		for i := range p.NamespaceRoles[ns] {
			want := p.NamespaceRoles[ns][i].DeepCopy()
			if err := z.reconcile(ctx, grRoles, ns, want, func(cur runtime.Object) (runtime.Object, bool) {
				c := cur.(*rbacv1.Role).DeepCopy()
				changed := mergeMeta(&c.ObjectMeta, &want.ObjectMeta)
				if ok, missing := covers(c.Rules, want.Rules); !ok {
					c.Rules = append(c.Rules, missing...)
					changed = true
				}
				return c, changed
			}); err != nil {
				return err
			}
		}
	}
	for _, ns := range sortedKeys(p.NamespaceRoleBindings) {
		for i := range p.NamespaceRoleBindings[ns] {
			want := p.NamespaceRoleBindings[ns][i].DeepCopy()
			if err := z.reconcileBinding(ctx, grRoleBindings, ns, want, &want.ObjectMeta, want.RoleRef, want.Subjects); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func containsSelector(list []metav1.LabelSelector, s metav1.LabelSelector) bool {
	for _, x := range list {
		if apiequality.Semantic.DeepEqual(x, s) {
			return true
		}
	}
	return false
}

// mergeMeta adds the expected labels and annotations the object lacks (its own values win).
func mergeMeta(cur, want *metav1.ObjectMeta) bool {
	changed := false
	for _, m := range []struct{ cur, want *map[string]string }{{&cur.Labels, &want.Labels}, {&cur.Annotations, &want.Annotations}} {
		for k, v := range *m.want {
			if _, ok := (*m.cur)[k]; !ok {
				if *m.cur == nil {
					*m.cur = map[string]string{}
				}
				(*m.cur)[k] = v
				changed = true
			}
		}
	}
	return changed
}

func autoupdate(obj runtime.Object) bool {
	a, _ := metaOf(obj)
	return a == nil || a.GetAnnotations()[rbacv1.AutoUpdateAnnotationKey] != "false"
}

// reconcile creates want in ns, or updates the existing object with fix when it allows
// automatic updates and fix reports a change.
func (z *Authz) reconcile(ctx context.Context, gr schema.GroupResource, ns string, want runtime.Object, fix func(runtime.Object) (runtime.Object, bool)) error {
	store := z.reg.Resource(gr).Store
	a, _ := metaOf(want)
	name := a.GetName()
	// The caches hold what etcd held at start: an object there that needs nothing costs no
	// etcd round trip (on a restart, that is all of them).
	if cur := z.rbac.cached(gr, ns, name); cur != nil {
		if !autoupdate(cur) {
			return nil
		}
		if _, changed := fix(cur.DeepCopyObject()); !changed {
			return nil
		}
	}
	_, err := store.Create(ctx, ns, "", want.DeepCopyObject(), &metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("authz: create bootstrap %s %s: %w", gr, name, err)
		}
		return nil
	}
	_, _, err = store.Update(ctx, ns, name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(gr, name)
		}
		if !autoupdate(cur) {
			return nil, errUnchanged
		}
		out, changed := fix(cur)
		if !changed {
			return nil, errUnchanged
		}
		return out, nil
	}, &metav1.UpdateOptions{})
	if err != nil && err != errUnchanged {
		return fmt.Errorf("authz: reconcile bootstrap %s %s: %w", gr, name, err)
	}
	if err == nil {
		z.log.Info("reconciled bootstrap RBAC object", "resource", gr.String(), "namespace", ns, "name", name)
	}
	return nil
}

type unchanged struct{}

func (unchanged) Error() string { return "unchanged" }

var errUnchanged error = unchanged{}

func (z *Authz) reconcileBinding(ctx context.Context, gr schema.GroupResource, ns string, want runtime.Object, wantMeta *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject) error {
	fixSubjects := func(cur *[]rbacv1.Subject) bool {
		changed := false
		for _, s := range subjects {
			found := false
			for _, c := range *cur {
				if c == s {
					found = true
					break
				}
			}
			if !found {
				*cur = append(*cur, s)
				changed = true
			}
		}
		return changed
	}
	cached := z.rbac.cached(gr, ns, wantMeta.Name)
	err := z.reconcile(ctx, gr, ns, want, func(cur runtime.Object) (runtime.Object, bool) {
		switch c := cur.DeepCopyObject().(type) {
		case *rbacv1.ClusterRoleBinding:
			if c.RoleRef != ref {
				return nil, false // recreated below
			}
			ch := mergeMeta(&c.ObjectMeta, wantMeta)
			return c, fixSubjects(&c.Subjects) || ch
		case *rbacv1.RoleBinding:
			if c.RoleRef != ref {
				return nil, false
			}
			ch := mergeMeta(&c.ObjectMeta, wantMeta)
			return c, fixSubjects(&c.Subjects) || ch
		}
		return nil, false
	})
	if err != nil {
		return err
	}
	if cached != nil && (roleRefOf(cached) == ref || !autoupdate(cached)) {
		return nil
	}
	// A binding whose roleRef differs cannot be updated (roleRef is immutable): recreate it.
	store := z.reg.Resource(gr).Store
	cur, err := store.Get(ctx, ns, wantMeta.Name, &metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("authz: reconcile bootstrap %s %s: %w", gr, wantMeta.Name, err)
	}
	if roleRefOf(cur) == ref || !autoupdate(cur) {
		return nil
	}
	if _, _, err := store.Delete(ctx, ns, wantMeta.Name, nil); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("authz: recreate bootstrap %s %s: %w", gr, wantMeta.Name, err)
	}
	// (not through reconcile: the cache still holds the binding just deleted)
	if _, err := store.Create(ctx, ns, "", want.DeepCopyObject(), &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("authz: create bootstrap %s %s: %w", gr, wantMeta.Name, err)
	}
	return nil
}

func roleRefOf(obj runtime.Object) rbacv1.RoleRef {
	switch c := obj.(type) {
	case *rbacv1.ClusterRoleBinding:
		return c.RoleRef
	case *rbacv1.RoleBinding:
		return c.RoleRef
	}
	return rbacv1.RoleRef{}
}

// aggregate is upstream's clusterrole aggregation controller: the rules of a ClusterRole
// with an aggregationRule are the rules of the ClusterRoles its selectors match (in name
// order, without repeats). It runs on every change of a ClusterRole until ctx ends.
func (z *Authz) aggregate(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-z.rbac.changed:
		}
		roles := z.rbac.clusterRoleList()
		sort.Slice(roles, func(i, j int) bool { return roles[i].Name < roles[j].Name })
		for _, cr := range roles {
			if cr.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					continue
				}
				for _, other := range roles {
					if other.Name == cr.Name || !s.Matches(labels.Set(other.Labels)) {
						continue
					}
					for _, r := range other.Rules {
						if !containsRule(rules, r) {
							rules = append(rules, r)
						}
					}
				}
			}
			if apiequality.Semantic.DeepEqual(rules, cr.Rules) {
				continue
			}
			name := cr.Name
			_, _, err := z.reg.Resource(grClusterRoles).Store.Update(ctx, "", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
				if cur == nil {
					return nil, apierrors.NewNotFound(grClusterRoles, name)
				}
				c := cur.(*rbacv1.ClusterRole).DeepCopy()
				c.Rules = rules
				return c, nil
			}, &metav1.UpdateOptions{})
			if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
				z.log.Warn("clusterrole aggregation failed, retrying", "clusterrole", name, "err", err)
				go func() {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
						z.rbac.signal()
					}
				}()
			}
		}
	}
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, x := range rules {
		if apiequality.Semantic.DeepEqual(x, r) {
			return true
		}
	}
	return false
}
