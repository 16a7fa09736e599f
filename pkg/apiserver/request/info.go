package request

import (
	"fmt"
	"net/http"
	"strings"
)

// namespaceSubresources are subresources of a namespace itself
// (/api/v1/namespaces/{name}/status), not resources inside it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// Parse tells what r asks for, the way kube-apiserver's RequestInfoFactory does, so that
// authorization, audit and the long-running classification see the same verb, resource,
// namespace, name and subresource as upstream's. Paths under /api and /apis that name a
// resource are resource requests:
//
//	/api/{version}/{resource}[/{name}[/{subresource}]]
//	/api/{version}/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]
//	/apis/{group}/{version}/...
//	/api/{version}/watch/..., /api/{version}/proxy/... (the verb comes first)
//
// Anything else (discovery, /version, /healthz, /openapi/v3) is a non-resource request with
// the lower-case HTTP method as its verb.
func Parse(r *http.Request) (*Info, error) {
	info := &Info{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return info, nil
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 3 {
			return info, nil // /apis/{group}/{version}: discovery
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	if parts[0] == "watch" || parts[0] == "proxy" {
		if len(parts) < 2 {
			return info, fmt.Errorf("unable to determine kind and namespace from url %v", r.URL)
		}
		info.Verb = parts[0]
		parts = parts[1:]
	} else {
		switch r.Method {
		case http.MethodPost:
			info.Verb = "create"
		case http.MethodGet, http.MethodHead:
			info.Verb = "get"
		case http.MethodPut:
			info.Verb = "update"
		case http.MethodPatch:
			info.Verb = "patch"
		case http.MethodDelete:
			info.Verb = "delete"
		default:
			info.Verb = ""
		}
	}

	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		// /namespaces/{ns}/{resource}...: the namespace's content, unless it is the
		// namespace's own subresource.
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	info.Parts = parts

	switch {
	case len(parts) >= 3 && info.Verb != "proxy":
		info.Subresource = parts[2]
		fallthrough
	case len(parts) >= 2:
		info.Name = parts[1]
		fallthrough
	case len(parts) >= 1:
		info.Resource = parts[0]
	}

	// Without a name, a get is a list or a watch (which a metadata.name field selector may
	// name), and a delete a deletecollection, as upstream.
	if info.Name == "" && info.Verb == "get" {
		info.Verb, info.Name = collectionVerb(r.URL.Query())
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}
	return info, nil
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
