// Package authz decides whether a caller may do what a request asks: the union of the
// --authorization-mode authorizers (Node, RBAC, AlwaysAllow, AlwaysDeny) behind
// system:masters, kube-apiserver's bootstrap RBAC policy and its reconciliation, ClusterRole
// aggregation, RBAC's escalation and bind checks, impersonation and the access reviews.
package authz

import (
	"context"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Decision is an authorizer's answer.
type Decision int

// Decisions, as upstream's authorizer.Decision.
const (
	// NoOpinion lets the next authorizer decide; if none allows, the request is forbidden.
	NoOpinion Decision = iota
	// Allow admits the request.
	Allow
	// Deny refuses it; later authorizers are not asked.
	Deny
)

// Attributes are what is authorized: who asks for what (upstream's authorizer.Attributes).
type Attributes struct {
	User            *request.User
	Verb            string
	ResourceRequest bool
	// Resource requests.
	Namespace, APIGroup, APIVersion, Resource, Subresource, Name string
	// Non-resource requests.
	Path string
	// FieldSelector is the request's field selector, for list, watch and deletecollection
	// (not through the /watch/ path prefix), as upstream's AuthorizeWithSelectors gives it
	// to authorizers; the Node authorizer lets a kubelet list only its own pods with it.
	FieldSelector fields.Requirements
}

// FromRequest returns the attributes of a parsed request made by u.
func FromRequest(u *request.User, i *request.Info) Attributes {
	return Attributes{User: u, Verb: i.Verb, ResourceRequest: i.IsResourceRequest, Namespace: i.Namespace,
		APIGroup: i.APIGroup, APIVersion: i.APIVersion, Resource: i.Resource, Subresource: i.Subresource, Name: i.Name, Path: i.Path}
}

// Authorizer decides on attributes; reason explains a NoOpinion or Deny.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// Union asks each authorizer in turn, as upstream's union authorizer: the first Allow or
// Deny wins, NoOpinion falls through; the reasons and errors of those that had none are
// joined.
type Union []Authorizer

// Authorize implements Authorizer.
func (u Union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if d == Allow || d == Deny {
			return d, reason, err
		}
	}
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("%v", errs)
	}
	return NoOpinion, strings.Join(reasons, "\n"), err
}

// privileged allows the system:masters group everything, ahead of every mode (upstream's
// privileged-groups authorizer).
var privileged = AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User != nil && hasString(a.User.Groups, request.SystemPrivilegedGrp) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
})

var (
	alwaysAllow = AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return Allow, "", nil })
	alwaysDeny  = AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
		return NoOpinion, "Everything is forbidden.", nil
	})
)

// Modes are the values --authorization-mode accepts.
var Modes = []string{"Node", "RBAC", "AlwaysAllow", "AlwaysDeny"}

// ParseModes checks a comma-separated --authorization-mode value.
func ParseModes(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if !hasString(Modes, m) {
			return nil, fmt.Errorf("authorization mode %q is not one of %s", m, strings.Join(Modes, ", "))
		}
		if seen[m] {
			return nil, fmt.Errorf("authorization mode %q is given twice", m)
		}
		seen[m] = true
		out = append(out, m)
	}
	return out, nil
}

// ForbiddenError is upstream's 403 for a request the authorizers did not allow, with
// responsewriters.Forbidden's message.
func ForbiddenError(a Attributes, reason string) *apierrors.StatusError {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg = msg + ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("%s", msg))
}

func forbiddenMessage(a Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, resource, a.APIGroup)
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
