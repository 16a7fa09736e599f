package authz

import (
	"context"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reviews are the authorization.k8s.io/v1 access reviews: SubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectAccessReview and SelfSubjectRulesReview. They are
// not stored: a create answers with the review's status. The server installs them with the
// registry's resources.
func (z *Authz) Reviews() []*registry.View {
	names := func(kind, plural string, namespaced bool) registry.Names {
		return registry.Names{Group: authorizationv1.GroupName, Version: "v1", Kind: kind, ListKind: kind + "List", Plural: plural,
			Singular: strings.ToLower(kind), Namespaced: namespaced}
	}
	return []*registry.View{
		{Names: names("LocalSubjectAccessReview", "localsubjectaccessreviews", true), Storage: &review{z: z, kind: "LocalSubjectAccessReview"}},
		{Names: names("SelfSubjectAccessReview", "selfsubjectaccessreviews", false), Storage: &review{z: z, kind: "SelfSubjectAccessReview"}},
		{Names: names("SelfSubjectRulesReview", "selfsubjectrulesreviews", false), Storage: &review{z: z, kind: "SelfSubjectRulesReview"}},
		{Names: names("SubjectAccessReview", "subjectaccessreviews", false), Storage: &review{z: z, kind: "SubjectAccessReview"}},
	}
}

// review serves one access review kind: only Create.
type review struct {
	z    *Authz
	kind string
}

func (r *review) Kind() schema.GroupVersionKind {
	return authorizationv1.SchemeGroupVersion.WithKind(r.kind)
}

func (r *review) New() runtime.Object {
	switch r.kind {
	case "LocalSubjectAccessReview":
		return &authorizationv1.LocalSubjectAccessReview{}
	case "SelfSubjectAccessReview":
		return &authorizationv1.SelfSubjectAccessReview{}
	case "SelfSubjectRulesReview":
		return &authorizationv1.SelfSubjectRulesReview{}
	}
	return &authorizationv1.SubjectAccessReview{}
}

func (r *review) invalid(errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName, Kind: r.kind}, "", errs)
}

// validateSpec is upstream's ValidateSubjectAccessReviewSpec/ValidateSelfSubjectAccessReviewSpec.
func validateAttrs(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, p *field.Path) field.ErrorList {
	switch {
	case ra != nil && nra != nil:
		return field.ErrorList{field.Invalid(p.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes")}
	case ra == nil && nra == nil:
		return field.ErrorList{field.Invalid(p.Child("resourceAttributes"), nra, "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	}
	return nil
}

func attrsOf(u *request.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) Attributes {
	if ra != nil {
		return Attributes{User: u, Verb: ra.Verb, ResourceRequest: true, Namespace: ra.Namespace, APIGroup: ra.Group, APIVersion: ra.Version,
			Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name}
	}
	return Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
}

func (r *review) decide(ctx context.Context, a Attributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := r.z.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == Allow, Denied: d == Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func extraOf(m map[string]authorizationv1.ExtraValue) map[string][]string {
	if len(m) == 0 {
		return nil
	}
	out := map[string][]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Create answers the review.
func (r *review) Create(ctx context.Context, ns, _ string, obj runtime.Object, _ *metav1.CreateOptions) (runtime.Object, error) {
	caller, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("no user on the request"))
	}
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *authorizationv1.SubjectAccessReview:
		errs := validateAttrs(o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes, spec)
		if o.Spec.User == "" && len(o.Spec.Groups) == 0 {
			errs = append(errs, field.Invalid(spec.Child("user"), o.Spec.User, "at least one of user or group must be specified"))
		}
		if len(errs) > 0 {
			return nil, r.invalid(errs)
		}
		u := &request.User{Name: o.Spec.User, UID: o.Spec.UID, Groups: o.Spec.Groups, Extra: extraOf(o.Spec.Extra)}
		o.Status = r.decide(ctx, attrsOf(u, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes))
		return o, nil
	case *authorizationv1.LocalSubjectAccessReview:
		errs := validateAttrs(o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes, spec)
		if o.Spec.NonResourceAttributes != nil {
			errs = field.ErrorList{field.Invalid(spec.Child("nonResourceAttributes"), o.Spec.NonResourceAttributes, "disallowed on this kind of request")}
		}
		if o.Spec.User == "" && len(o.Spec.Groups) == 0 {
			errs = append(errs, field.Invalid(spec.Child("user"), o.Spec.User, "at least one of user or group must be specified"))
		}
		if len(errs) > 0 {
			return nil, r.invalid(errs)
		}
		if o.Namespace == "" {
			o.Namespace = ns
		}
		if ns != o.Namespace || o.Spec.ResourceAttributes.Namespace != ns {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", ns))
		}
		u := &request.User{Name: o.Spec.User, UID: o.Spec.UID, Groups: o.Spec.Groups, Extra: extraOf(o.Spec.Extra)}
		o.Status = r.decide(ctx, attrsOf(u, o.Spec.ResourceAttributes, nil))
		return o, nil
	case *authorizationv1.SelfSubjectAccessReview:
		if errs := validateAttrs(o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes, spec); len(errs) > 0 {
			return nil, r.invalid(errs)
		}
		o.Status = r.decide(ctx, attrsOf(caller, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes))
		return o, nil
	case *authorizationv1.SelfSubjectRulesReview:
		if o.Spec.Namespace == "" {
			return nil, apierrors.NewBadRequest("no namespace on request")
		}
		o.Status = r.z.rulesReview(caller, o.Spec.Namespace)
		return o, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %s", r.kind))
}

// rulesReview lists what u may do in ns, as upstream's union rule resolver: every mode's
// rules, incomplete when a mode cannot list its rules (the Node authorizer for nodes).
func (z *Authz) rulesReview(u *request.User, ns string) authorizationv1.SubjectRulesReviewStatus {
	var st authorizationv1.SubjectRulesReviewStatus
	add := func(rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			if len(r.NonResourceURLs) > 0 {
				st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			} else {
				st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
			}
		}
	}
	var errs []string
	if hasString(u.Groups, request.SystemPrivilegedGrp) {
		add(fullAuthority)
	}
	for _, m := range z.modes {
		switch m {
		case "AlwaysAllow":
			add(fullAuthority)
		case "RBAC":
			add(z.rbac.RulesFor(u, ns))
		case "Node":
			if _, ok := nodeIdentity(u); ok {
				st.Incomplete = true
				errs = append(errs, "node authorizer does not support user rule resolution")
			}
		}
	}
	if len(errs) > 0 {
		st.EvaluationError = fmt.Sprintf("%v", errs)
	}
	if st.ResourceRules == nil {
		st.ResourceRules = []authorizationv1.ResourceRule{}
	}
	if st.NonResourceRules == nil {
		st.NonResourceRules = []authorizationv1.NonResourceRule{}
	}
	return st
}
