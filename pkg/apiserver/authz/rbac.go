package authz

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/request"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RBAC authorizes by Roles, ClusterRoles and their bindings, read from an in-process copy
// kept in step with etcd by watches (every apiserver sees a change as soon as etcd reports
// it) and indexed by subject, so that a request looks only at the bindings of its user and
// groups.
type RBAC struct {
	mu           sync.RWMutex
	roles        map[string]*rbacv1.Role        // namespace/name
	clusterRoles map[string]*rbacv1.ClusterRole // name
	rbs          map[string]*rbacv1.RoleBinding // namespace/name
	crbs         map[string]*rbacv1.ClusterRoleBinding
	// rbIndex: namespace + subject key -> bindings; crbIndex: subject key -> bindings.
	rbIndex  map[string]map[string]*rbacv1.RoleBinding
	crbIndex map[string]map[string]*rbacv1.ClusterRoleBinding
	// changed is signalled (without blocking) on every ClusterRole change, for aggregation.
	changed chan struct{}
}

func newRBAC() *RBAC {
	return &RBAC{
		roles: map[string]*rbacv1.Role{}, clusterRoles: map[string]*rbacv1.ClusterRole{},
		rbs: map[string]*rbacv1.RoleBinding{}, crbs: map[string]*rbacv1.ClusterRoleBinding{},
		rbIndex: map[string]map[string]*rbacv1.RoleBinding{}, crbIndex: map[string]map[string]*rbacv1.ClusterRoleBinding{},
		changed: make(chan struct{}, 1),
	}
}

// subjectKey names a subject the way a user is looked up: users (service accounts are
// users named system:serviceaccount:NS:NAME) and groups.
func subjectKey(s rbacv1.Subject, bindingNS string) string {
	switch s.Kind {
	case rbacv1.UserKind:
		return "u:" + s.Name
	case rbacv1.GroupKind:
		return "g:" + s.Name
	case rbacv1.ServiceAccountKind:
		ns := bindingNS
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return "u:system:serviceaccount:" + ns + ":" + s.Name
	}
	return ""
}

func userKeys(u *request.User) []string {
	keys := make([]string, 0, len(u.Groups)+1)
	keys = append(keys, "u:"+u.Name)
	for _, g := range u.Groups {
		keys = append(keys, "g:"+g)
	}
	return keys
}

func nsName(ns, name string) string { return ns + "/" + name }

// Authorize implements Authorizer: Allow when a rule bound to the user admits the request,
// NoOpinion otherwise (RBAC never denies).
func (r *RBAC) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User == nil {
		return NoOpinion, "", nil
	}
	var by binding
	allowed := false
	r.visit(a.User, a.Namespace, func(rules []rbacv1.PolicyRule, b binding) bool {
		allowed = rulesAllow(&a, rules)
		by = b
		return !allowed
	})
	if allowed {
		return Allow, "RBAC: allowed by " + by.describe(a.User), nil
	}
	return NoOpinion, "", nil
}

// binding is the ClusterRoleBinding or RoleBinding a rule came through.
type binding struct {
	crb *rbacv1.ClusterRoleBinding
	rb  *rbacv1.RoleBinding
}

// describe names the binding as upstream's RBAC reason does: ClusterRoleBinding "x" of
// ClusterRole "y" to User "z", or RoleBinding "x/ns" of Role "y" to Group "g".
func (b binding) describe(u *request.User) string {
	keys := userKeys(u)
	subject := func(subjects []rbacv1.Subject, ns string) string {
		for _, s := range subjects {
			if !hasString(keys, subjectKey(s, ns)) {
				continue
			}
			if s.Kind == rbacv1.ServiceAccountKind {
				sns := s.Namespace
				if sns == "" {
					sns = ns
				}
				return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+sns)
			}
			return fmt.Sprintf("%s %q", s.Kind, s.Name)
		}
		return ""
	}
	if b.crb != nil {
		return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.crb.Name, b.crb.RoleRef.Kind, b.crb.RoleRef.Name, subject(b.crb.Subjects, ""))
	}
	if b.rb != nil {
		return fmt.Sprintf("RoleBinding %q of %s %q to %s", b.rb.Name+"/"+b.rb.Namespace, b.rb.RoleRef.Kind, b.rb.RoleRef.Name, subject(b.rb.Subjects, b.rb.Namespace))
	}
	return ""
}

// visit calls fn with the rules of every role bound to u, cluster-wide and (if ns is set)
// in ns, until fn returns false.
func (r *RBAC) visit(u *request.User, ns string, fn func([]rbacv1.PolicyRule, binding) bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range userKeys(u) {
		for _, b := range r.crbIndex[k] {
			if cr := r.clusterRoles[b.RoleRef.Name]; cr != nil && b.RoleRef.Kind == "ClusterRole" {
				if !fn(cr.Rules, binding{crb: b}) {
					return
				}
			}
		}
	}
	if ns == "" {
		return
	}
	for _, k := range userKeys(u) {
		for _, b := range r.rbIndex[ns+"|"+k] {
			if rules, ok := r.refRulesLocked(b.RoleRef, ns); ok && !fn(rules, binding{rb: b}) {
				return
			}
		}
	}
}

func (r *RBAC) refRulesLocked(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, bool) {
	switch ref.Kind {
	case "Role":
		if role := r.roles[nsName(ns, ref.Name)]; role != nil {
			return role.Rules, true
		}
	case "ClusterRole":
		if cr := r.clusterRoles[ref.Name]; cr != nil {
			return cr.Rules, true
		}
	}
	return nil, false
}

// RulesFor returns every rule that applies to u in ns (cluster-wide ones included), as
// upstream's rule resolver does for escalation checks and SelfSubjectRulesReview.
func (r *RBAC) RulesFor(u *request.User, ns string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	r.visit(u, ns, func(rules []rbacv1.PolicyRule, _ binding) bool {
		out = append(out, rules...)
		return true
	})
	return out
}

// RefRules returns the rules of the role a binding in ns refers to, or upstream's NotFound.
func (r *RBAC) RefRules(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if rules, ok := r.refRulesLocked(ref, ns); ok {
		return rules, nil
	}
	if ref.Kind == "Role" {
		return nil, apierrors.NewNotFound(rbacv1.Resource("role"), ref.Name)
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), ref.Name)
}

// clusterRoleList returns a snapshot of the ClusterRoles.
func (r *RBAC) clusterRoleList() []*rbacv1.ClusterRole {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*rbacv1.ClusterRole, 0, len(r.clusterRoles))
	for _, cr := range r.clusterRoles {
		out = append(out, cr)
	}
	return out
}

func (r *RBAC) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// The cache handlers, one per kind, fed by the shared informers (caches.go).

func (r *RBAC) applyRole(deleted bool, x *rbacv1.Role) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if deleted {
		delete(r.roles, nsName(x.Namespace, x.Name))
	} else {
		r.roles[nsName(x.Namespace, x.Name)] = x
	}
}

func (r *RBAC) applyClusterRole(deleted bool, x *rbacv1.ClusterRole) {
	r.mu.Lock()
	if deleted {
		delete(r.clusterRoles, x.Name)
	} else {
		r.clusterRoles[x.Name] = x
	}
	r.mu.Unlock()
	r.signal()
}

func (r *RBAC) indexRB(b *rbacv1.RoleBinding, add bool) {
	for _, s := range b.Subjects {
		k := b.Namespace + "|" + subjectKey(s, b.Namespace)
		m := r.rbIndex[k]
		if add {
			if m == nil {
				m = map[string]*rbacv1.RoleBinding{}
				r.rbIndex[k] = m
			}
			m[b.Name] = b
		} else if m != nil {
			delete(m, b.Name)
			if len(m) == 0 {
				delete(r.rbIndex, k)
			}
		}
	}
}

func (r *RBAC) indexCRB(b *rbacv1.ClusterRoleBinding, add bool) {
	for _, s := range b.Subjects {
		k := subjectKey(s, "")
		m := r.crbIndex[k]
		if add {
			if m == nil {
				m = map[string]*rbacv1.ClusterRoleBinding{}
				r.crbIndex[k] = m
			}
			m[b.Name] = b
		} else if m != nil {
			delete(m, b.Name)
			if len(m) == 0 {
				delete(r.crbIndex, k)
			}
		}
	}
}

func (r *RBAC) applyRoleBinding(deleted bool, x *rbacv1.RoleBinding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := nsName(x.Namespace, x.Name)
	if old := r.rbs[key]; old != nil {
		r.indexRB(old, false)
		delete(r.rbs, key)
	}
	if !deleted {
		r.rbs[key] = x
		r.indexRB(x, true)
	}
}

func (r *RBAC) applyClusterRoleBinding(deleted bool, x *rbacv1.ClusterRoleBinding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.crbs[x.Name]; old != nil {
		r.indexCRB(old, false)
		delete(r.crbs, x.Name)
	}
	if !deleted {
		r.crbs[x.Name] = x
		r.indexCRB(x, true)
	}
}

// waitForPolicy waits until the caches hold every object of p (by name), or ctx ends.
// cached is the cache's object of gr (one of the four RBAC kinds) named ns/name, or nil.
func (r *RBAC) cached(gr schema.GroupResource, ns, name string) runtime.Object {
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch gr {
	case grRoles:
		if x := r.roles[nsName(ns, name)]; x != nil {
			return x
		}
	case grClusterRoles:
		if x := r.clusterRoles[name]; x != nil {
			return x
		}
	case grRoleBindings:
		if x := r.rbs[nsName(ns, name)]; x != nil {
			return x
		}
	case grClusterRoleBindings:
		if x := r.crbs[name]; x != nil {
			return x
		}
	}
	return nil
}

func (r *RBAC) waitForPolicy(ctx context.Context, p Policy) error {
	missing := func() string {
		r.mu.RLock()
		defer r.mu.RUnlock()
		for _, cr := range p.ClusterRoles {
			if r.clusterRoles[cr.Name] == nil {
				return "clusterrole " + cr.Name
			}
		}
		for _, b := range p.ClusterRoleBindings {
			if r.crbs[b.Name] == nil {
				return "clusterrolebinding " + b.Name
			}
		}
		for ns, roles := range p.NamespaceRoles {
			for _, role := range roles {
				if r.roles[nsName(ns, role.Name)] == nil {
					return "role " + ns + "/" + role.Name
				}
			}
		}
		for ns, bindings := range p.NamespaceRoleBindings {
			for _, b := range bindings {
				if r.rbs[nsName(ns, b.Name)] == nil {
					return "rolebinding " + ns + "/" + b.Name
				}
			}
		}
		return ""
	}
	for what := missing(); what != ""; what = missing() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("authz: waiting for the bootstrap policy in the caches (%s): %w", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
