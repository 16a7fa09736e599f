package server

import (
	"net/http/httptest"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/request"
)

// TestFieldSelectorForAuthorizers: authorizers see a request's field selector on lists,
// watches and deletecollections, not on the legacy /watch/ prefix nor on named requests, as
// upstream's AuthorizeWithSelectors.
func TestFieldSelectorForAuthorizers(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           string // the first requirement as field=value, "" for none
	}{
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", "spec.nodeName=n1"},
		{"GET", "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1", "spec.nodeName=n1"},
		{"DELETE", "/api/v1/namespaces/a/pods?fieldSelector=spec.nodeName%3Dn1", "spec.nodeName=n1"},
		{"GET", "/api/v1/watch/pods?fieldSelector=spec.nodeName%3Dn1", ""},
		{"GET", "/apis/resource.k8s.io/v1/watch/resourceslices?fieldSelector=spec.nodeName%3Dn1", ""},
		{"GET", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dn1", "spec.nodeName=n1"},
		{"GET", "/api/v1/namespaces/a/pods/p1?fieldSelector=spec.nodeName%3Dn1", ""},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D%3D%3D", ""},
		{"GET", "/api/v1/pods", ""},
		{"GET", "/healthz?fieldSelector=spec.nodeName%3Dn1", ""},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			info, err := request.Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if reqs := fieldSelector(r, info); len(reqs) > 0 {
				got = reqs[0].Field + "=" + reqs[0].Value
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
