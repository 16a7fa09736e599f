package authz

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Impersonation headers, as kubectl --as, --as-group, --as-uid and client-go send them.
const (
	ImpersonateUser        = authenticationv1.ImpersonateUserHeader
	ImpersonateGroup       = authenticationv1.ImpersonateGroupHeader
	ImpersonateUID         = authenticationv1.ImpersonateUIDHeader
	ImpersonateExtraPrefix = authenticationv1.ImpersonateUserExtraHeaderPrefix
)

const serviceAccountPrefix = "system:serviceaccount:"

// Impersonate returns the user a request acts as when it carries impersonation headers
// (nil when it carries none), after checking with the authorizer that the requestor may
// impersonate each of the user, its groups, uid and extra values, as upstream's
// impersonation filter: the check is the impersonate verb on users, groups, uids,
// serviceaccounts or userextras/KEY. Errors are upstream's 400 and 403 Status errors.
func (z *Authz) Impersonate(ctx context.Context, requestor *request.User, h http.Header) (*request.User, error) {
	name := h.Get(ImpersonateUser)
	groups := h.Values(ImpersonateGroup)
	uid := h.Get(ImpersonateUID)
	extra := map[string][]string{}
	for k, v := range h {
		if strings.HasPrefix(k, ImpersonateExtraPrefix) {
			key := strings.ToLower(k[len(ImpersonateExtraPrefix):])
			if unescaped, err := url.PathUnescape(key); err == nil {
				key = unescaped
			}
			extra[key] = append(extra[key], v...)
		}
	}
	if name == "" && len(h.Values(ImpersonateUser)) == 0 {
		if len(groups) > 0 || len(extra) > 0 || uid != "" {
			var what []string
			for _, g := range groups {
				what = append(what, fmt.Sprintf("%s=%s", ImpersonateGroup, g))
			}
			for k := range extra {
				what = append(what, fmt.Sprintf("%s%s=%v", ImpersonateExtraPrefix, k, extra[k]))
			}
			if uid != "" {
				what = append(what, fmt.Sprintf("%s=%s", ImpersonateUID, uid))
			}
			return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", what))
		}
		return nil, nil
	}
	check := func(a Attributes) error {
		a.User, a.Verb, a.ResourceRequest = requestor, "impersonate", true
		d, reason, _ := z.Authorize(ctx, a)
		if d != Allow {
			return ForbiddenError(a, reason)
		}
		return nil
	}
	u := &request.User{Name: name}
	if ns, sa, ok := strings.Cut(strings.TrimPrefix(name, serviceAccountPrefix), ":"); strings.HasPrefix(name, serviceAccountPrefix) && ok {
		if err := check(Attributes{Resource: "serviceaccounts", Namespace: ns, Name: sa}); err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			u.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
		}
	} else if err := check(Attributes{Resource: "users", Name: name}); err != nil {
		return nil, err
	}
	for _, g := range groups {
		if err := check(Attributes{Resource: "groups", Name: g}); err != nil {
			return nil, err
		}
		u.Groups = append(u.Groups, g)
	}
	for _, k := range sortedKeys(extra) {
		for _, v := range extra[k] {
			if err := check(Attributes{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v}); err != nil {
				return nil, err
			}
		}
	}
	if len(extra) > 0 {
		u.Extra = extra
	}
	if uid != "" {
		if err := check(Attributes{APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid}); err != nil {
			return nil, err
		}
		u.UID = uid
	}
	if name != request.Anonymous {
		if !hasString(u.Groups, request.AllAuthenticated) && !hasString(u.Groups, request.AllUnauthenticated) {
			u.Groups = append(u.Groups, request.AllAuthenticated)
		}
	} else if !hasString(u.Groups, request.AllUnauthenticated) {
		u.Groups = append(u.Groups, request.AllUnauthenticated)
	}
	return u, nil
}
