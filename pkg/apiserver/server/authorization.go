package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/authz"
	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	"github.com/hacp/hacp/pkg/apiserver/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
)

// impersonate replaces the authenticated user with the one the Impersonate-* headers name,
// when the authorizers allow the requestor to impersonate it (upstream's impersonation
// filter); the headers are dropped either way.
func (s *Server) impersonate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(authz.ImpersonateUser) == "" && len(r.Header.Values(authz.ImpersonateGroup)) == 0 && r.Header.Get(authz.ImpersonateUID) == "" && !hasExtraHeader(r.Header) {
			next.ServeHTTP(w, r)
			return
		}
		requestor, _ := request.UserFrom(r.Context())
		u, err := s.authz.Impersonate(r.Context(), requestor, r.Header)
		if err != nil {
			endpoints.WriteStatusError(w, r, err)
			return
		}
		audit.LogImpersonatedUser(r.Context(), u)
		r = r.Clone(request.WithUser(r.Context(), u))
		for k := range r.Header {
			if k == authz.ImpersonateUser || k == authz.ImpersonateGroup || k == authz.ImpersonateUID || strings.HasPrefix(k, authz.ImpersonateExtraPrefix) {
				r.Header.Del(k)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// fieldSelector is the request's field selector as upstream's authorizers see it (the
// AuthorizeWithSelectors feature): parsed for list, watch and deletecollection, unless the
// verb came from the legacy /watch/ path prefix; nil when absent or unparsable.
func fieldSelector(r *http.Request, info *request.Info) fields.Requirements {
	if !info.IsResourceRequest || watchPathPrefix(info) {
		return nil
	}
	switch info.Verb {
	case "list", "watch", "deletecollection":
	default:
		return nil
	}
	raw, ok := r.URL.Query()["fieldSelector"]
	if !ok || raw[0] == "" {
		return nil
	}
	sel, err := fields.ParseSelector(raw[0])
	if err != nil {
		return nil
	}
	return sel.Requirements()
}

// watchPathPrefix reports whether the request's verb came from /api/v1/watch/... or
// /apis/{group}/{version}/watch/....
func watchPathPrefix(info *request.Info) bool {
	parts := strings.Split(strings.Trim(info.Path, "/"), "/")
	i := 2 // api/v1/watch
	if info.APIPrefix == "apis" {
		i = 3
	}
	return info.Verb == "watch" && len(parts) > i && parts[i] == "watch"
}

func hasExtraHeader(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, authz.ImpersonateExtraPrefix) {
			return true
		}
	}
	return false
}

// The audit annotations the authorization filter records, as upstream's.
const (
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
)

// authorize answers 403 with upstream's message unless the authorizers allow the request.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		info, ok := request.InfoFrom(r.Context())
		if !ok {
			endpoints.WriteStatusError(w, r, apierrors.NewInternalError(errNoRequestInfo))
			return
		}
		a := authz.FromRequest(u, info)
		a.FieldSelector = fieldSelector(r, info)
		d, reason, err := s.authz.Authorize(r.Context(), a)
		if d == authz.Allow && podStreamWebsocket(r, info) {
			// A WebSocket exec, attach or port-forward is a GET but does what a POST does:
			// it needs create too (upstream's AuthorizePodWebsocketUpgradeCreatePermission).
			a.Verb = "create"
			d, reason, err = s.authz.Authorize(r.Context(), a)
		}
		// As upstream's WithAuthorization: an authorizer may allow despite an error.
		if d == authz.Allow {
			request.AddAnnotation(r.Context(), DecisionAnnotation, "allow")
			request.AddAnnotation(r.Context(), ReasonAnnotation, reason)
			if a.Verb == "delete" {
				// Only a delete checks another verb (an unsafe deletion's): other requests
				// go on without the copy of the request a new context costs.
				r = r.WithContext(request.WithVerbCheck(r.Context(), s.verbCheck(a)))
			}
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			request.AddAnnotation(r.Context(), ReasonAnnotation, "internal error")
			endpoints.WriteStatusError(w, r, apierrors.NewInternalError(err))
			return
		}
		request.AddAnnotation(r.Context(), DecisionAnnotation, "forbid")
		request.AddAnnotation(r.Context(), ReasonAnnotation, reason)
		endpoints.WriteStatusError(w, r, authz.ForbiddenError(a, reason))
	})
}

// podStreamWebsocket reports a WebSocket upgrade of pods/exec, attach or portforward.
func podStreamWebsocket(r *http.Request, info *request.Info) bool {
	if !info.IsResourceRequest || info.APIGroup != "" || info.Resource != "pods" || info.Verb != "get" {
		return false
	}
	switch info.Subresource {
	case "exec", "attach", "portforward":
		return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	}
	return false
}

type noRequestInfo struct{}

func (noRequestInfo) Error() string { return "no request info on the request" }

var errNoRequestInfo error = noRequestInfo{}

// verbCheck checks another verb on the resource of a, the request's attributes (the
// handlers' extra permissions, such as an unsafe deletion's).
func (s *Server) verbCheck(a authz.Attributes) request.VerbCheck {
	return func(ctx context.Context, verb string) (bool, string, error) {
		b := a
		b.Verb = verb
		d, reason, err := s.authz.Authorize(ctx, b)
		return d == authz.Allow, reason, err
	}
}
