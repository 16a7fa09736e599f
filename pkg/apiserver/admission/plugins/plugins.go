// Package plugins holds hacp's built-in admission plugins, each upstream's plugin of the same
// name: what it defaults, what it refuses and with which message. Each reads the objects it
// needs from the shared informers (pkg/apiserver/informer), never from storage per request, except
// for a read-through on a cache miss where upstream does the same.
package plugins

import "github.com/hacp/hacp/pkg/apiserver/admission"

// isPod reports a request on a pod itself (not a subresource).
func isPod(a *admission.Attributes) bool {
	return a.Resource.Group == "" && a.Resource.Resource == "pods" && a.Subresource == ""
}
