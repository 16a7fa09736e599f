package request

import (
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        Info
	}{
		{"GET", "/api/v1/namespaces", Info{Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/other", Info{Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Name: "other"}},
		{"PUT", "/api/v1/namespaces/other/finalize", Info{Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "namespaces", Name: "other", Subresource: "finalize"}},
		{"GET", "/api/v1/namespaces/other/pods", Info{Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/other/pods/foo", Info{Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"HEAD", "/api/v1/namespaces/other/pods/foo", Info{Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"GET", "/api/v1/pods", Info{Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/pods?watch=true", Info{Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/pods?watch=1", Info{Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/pods?watch=false", Info{Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/other/pods?watch=true&fieldSelector=metadata.name%3Dfoo", Info{Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"GET", "/api/v1/watch/pods", Info{Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/other/pods/foo", Info{Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"POST", "/api/v1/namespaces/other/pods", Info{Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"PATCH", "/api/v1/namespaces/other/pods/foo/status", Info{Verb: "patch", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Subresource: "status"}},
		{"DELETE", "/api/v1/namespaces/other/pods/foo", Info{Verb: "delete", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"DELETE", "/api/v1/namespaces/other/pods", Info{Verb: "deletecollection", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods"}},
		{"POST", "/api/v1/namespaces/other/pods/foo/eviction", Info{Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Subresource: "eviction"}},
		{"GET", "/api/v1/namespaces/other/pods/foo/log", Info{Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo", Subresource: "log"}},
		{"GET", "/api/v1/proxy/namespaces/other/pods/foo/some/path", Info{Verb: "proxy", APIPrefix: "api", APIVersion: "v1", Namespace: "other", Resource: "pods", Name: "foo"}},
		{"GET", "/apis/apps/v1/namespaces/other/deployments/web/scale", Info{Verb: "get", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "other", Resource: "deployments", Name: "web", Subresource: "scale"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", Info{Verb: "get", APIPrefix: "apis", APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Resource: "clusterroles", Name: "admin"}},
		// An object (or namespace) named like a verb is just a name.
		{"GET", "/api/v1/namespaces/watch/pods/watch", Info{Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "watch", Resource: "pods", Name: "watch"}},
	} {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			got, err := Parse(httptest.NewRequest(tc.method, tc.url, nil))
			if err != nil {
				t.Fatal(err)
			}
			got.Parts = nil
			tc.want.IsResourceRequest = true
			tc.want.Path = got.Path
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("Parse:\n got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestParseNonResource(t *testing.T) {
	for _, u := range []string{"/", "/healthz", "/version", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/openapi/v3/apis/apps/v1", "/metrics"} {
		t.Run(u, func(t *testing.T) {
			got, err := Parse(httptest.NewRequest("GET", u, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got.IsResourceRequest || got.Verb != "get" || got.Path != u {
				t.Fatalf("Parse(%s) = %+v, want a non-resource get of that path", u, *got)
			}
		})
	}
}

func TestParseBadVerbPath(t *testing.T) {
	if _, err := Parse(httptest.NewRequest("GET", "/api/v1/watch", nil)); err == nil {
		t.Fatal("Parse(/api/v1/watch) succeeded; upstream answers that it cannot tell the kind")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"/api/v1/namespaces/a/pods/b/status", "/apis/g/v/watch/x", "//api//v1//", "/api/v1/proxy/namespaces"} {
		f.Add("GET", s)
	}
	f.Fuzz(func(t *testing.T, method, p string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Method = method
		r.URL.Path = p
		info, err := Parse(r)
		if err == nil && info == nil {
			t.Fatal("nil info without an error")
		}
	})
}
