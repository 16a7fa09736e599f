// Package rbac holds the rbac.authorization.k8s.io kinds: roles, cluster roles and their bindings.
// Each kind is one file whose XxxKind function the controlplane lists.
package rbac

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rbac.authorization.k8s.io/v1 kinds, validated and defaulted as upstream's
// pkg/apis/rbac/validation and v1 defaults. Who may write them (the escalation and bind
// checks) is decided by the authorizer's admission hook (Store.SetAdmit).

var rbacNames = func(kind, plural, singular string, namespaced bool) registry.Names {
	return registry.Names{Group: rbacv1.GroupName, Version: "v1", Kind: kind, ListKind: kind + "List", Plural: plural, Singular: singular, Namespaced: namespaced}
}

// rbacName is upstream's ValidateRBACName: any name that is a valid path segment.
func rbacName(name string, _ bool) []string { return content.IsPathSegmentName(name) }

func RolesKind() *registry.Kind {
	return &registry.Kind{
		Names:   rbacNames("Role", "roles", "role", true),
		New:     func() runtime.Object { return &rbacv1.Role{} },
		NewList: func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy: registry.Strategy{NameValidation: rbacName, AllowCreateOnUpdate: true, Validate: func(obj runtime.Object) field.ErrorList {
			return validateRules(obj.(*rbacv1.Role).Rules, true, field.NewPath("rules"))
		}},
	}
}

func ClusterRolesKind() *registry.Kind {
	return &registry.Kind{
		Names:   rbacNames("ClusterRole", "clusterroles", "clusterrole", false),
		New:     func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy: registry.Strategy{NameValidation: rbacName, AllowCreateOnUpdate: true, Validate: func(obj runtime.Object) field.ErrorList {
			cr := obj.(*rbacv1.ClusterRole)
			errs := validateRules(cr.Rules, false, field.NewPath("rules"))
			if ar := cr.AggregationRule; ar != nil {
				p := field.NewPath("aggregationRule", "clusterRoleSelectors")
				if len(ar.ClusterRoleSelectors) == 0 {
					errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
				}
				for i := range ar.ClusterRoleSelectors {
					errs = append(errs, metav1validation.ValidateLabelSelector(&ar.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
				}
			}
			return errs
		}},
	}
}

func RoleBindingsKind() *registry.Kind {
	return &registry.Kind{
		Names:   rbacNames("RoleBinding", "rolebindings", "rolebinding", true),
		New:     func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy: registry.Strategy{
			NameValidation:      rbacName,
			AllowCreateOnUpdate: true,
			Default:             func(obj runtime.Object) { defaultSubjects(obj.(*rbacv1.RoleBinding).Subjects) },
			Validate: func(obj runtime.Object) field.ErrorList {
				rb := obj.(*rbacv1.RoleBinding)
				return validateBinding(rb.RoleRef, rb.Subjects, true)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return roleRefImmutable(obj.(*rbacv1.RoleBinding).RoleRef, old.(*rbacv1.RoleBinding).RoleRef)
			},
		},
	}
}

func ClusterRoleBindingsKind() *registry.Kind {
	return &registry.Kind{
		Names:   rbacNames("ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", false),
		New:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy: registry.Strategy{
			NameValidation:      rbacName,
			AllowCreateOnUpdate: true,
			Default:             func(obj runtime.Object) { defaultSubjects(obj.(*rbacv1.ClusterRoleBinding).Subjects) },
			Validate: func(obj runtime.Object) field.ErrorList {
				b := obj.(*rbacv1.ClusterRoleBinding)
				return validateBinding(b.RoleRef, b.Subjects, false)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return roleRefImmutable(obj.(*rbacv1.ClusterRoleBinding).RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)
			},
		},
	}
}

// defaultSubjects is upstream's SetDefaults_Subject: users and groups are in the RBAC group.
func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// validateRules is upstream's ValidatePolicyRule for every rule.
func validateRules(rules []rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		rp := p.Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(rp.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(rp.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(rp.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(rp.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(rp.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

// validateBinding is upstream's ValidateRoleBinding / ValidateClusterRoleBinding after metadata.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	rp := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && (!namespaced || ref.Kind != "Role") {
		errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(rp.Child("name"), ""))
	} else {
		for _, msg := range rbacName(ref.Name, false) {
			errs = append(errs, field.Invalid(rp.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		sp := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
					errs = append(errs, field.Invalid(sp.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(sp.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(sp.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(sp.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(sp.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

func roleRefImmutable(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}
