// Package request carries what the filter chain learns about a request (who is asking, and
// what they ask for) to the filters and handlers after it, in the request's context, as
// kube-apiserver's endpoints/request package does.
package request

import (
	"context"
	"net/http"
)

// User is an authenticated (or anonymous) caller, as authenticators and impersonation
// produce it and authorizers, admission and audit read it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Well-known users and groups.
const (
	Anonymous           = "system:anonymous"
	AllAuthenticated    = "system:authenticated"
	AllUnauthenticated  = "system:unauthenticated"
	SystemPrivilegedGrp = "system:masters"
)

// Info is what a request asks for, parsed from its method and path. Resource requests
// (under /api and /apis with a resource) have IsResourceRequest set and the resource fields
// filled; everything else is a non-resource request, authorized by Path.
type Info struct {
	IsResourceRequest bool
	// Path is the URL path, for non-resource requests.
	Path string
	// Verb is get, list, watch, create, update, patch, delete, deletecollection for
	// resource requests (proxy, connect verbs for proxy-type subresources), and the
	// lower-case HTTP method for non-resource requests.
	Verb string

	APIPrefix   string // "api" or "apis"
	APIGroup    string // "" for the core group
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Parts are the path segments after the namespace, if any: resource, name, subresource...
	Parts []string
}

// LongRunning reports requests that stream for as long as the client wants (watches and
// proxy-type subresources): they are exempt from the in-flight limit and the request timeout.
func (i *Info) LongRunning() bool {
	if i == nil || !i.IsResourceRequest {
		return false
	}
	switch i.Verb {
	case "watch", "proxy", "connect":
		return true
	}
	switch i.Subresource {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return false
}

type userKey struct{}
type infoKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user ctx carries.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the request info ctx carries.
func InfoFrom(ctx context.Context) (*Info, bool) {
	i, ok := ctx.Value(infoKey{}).(*Info)
	return i, ok && i != nil
}

// IsWatch reports whether r is a watch: its verb in the Info the filter chain parsed
// (parsed here when r comes without one), so that the handler streams exactly the requests
// that authorization, audit and the in-flight and timeout filters took for watches.
func IsWatch(r *http.Request) bool {
	info, ok := InfoFrom(r.Context())
	if !ok {
		var err error
		if info, err = Parse(r); err != nil {
			return false
		}
	}
	return info.IsResourceRequest && info.Verb == "watch"
}
