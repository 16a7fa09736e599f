package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
)

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestClientGo reads the documents the way kubectl does: client-go's
// discovery client for v2 (protobuf) and its openapi3 root for v3.
func TestClientGo(t *testing.T) {
	s := mustNew(t)
	srv := serve(t, s.Handler())
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("v2 protobuf", func(t *testing.T) {
		doc, err := dc.OpenAPISchema()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			if d.Name == "io.k8s.api.core.v1.Pod" {
				found = true
			}
		}
		if !found {
			t.Error("protobuf document lacks io.k8s.api.core.v1.Pod")
		}
	})

	t.Run("v3", func(t *testing.T) {
		root := openapi3.NewRoot(dc.OpenAPIV3())
		gvs, err := root.GroupVersions()
		if err != nil {
			t.Fatal(err)
		}
		if len(gvs) != 4 {
			t.Errorf("group versions = %v", gvs)
		}
		doc, err := root.GVSpec(appsv1.SchemeGroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Components.Schemas["io.k8s.api.apps.v1.Deployment"] == nil {
			t.Error("apps/v1 lacks Deployment")
		}
		m, err := root.GVSpecAsMap(schema.GroupVersion{Version: "v1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m["components"]; !ok {
			t.Error("core/v1 map has no components")
		}
	})
}

func TestHandlerHeaders(t *testing.T) {
	s := mustNew(t)
	srv := serve(t, s.Handler())
	data, _ := s.V3("apis/apps/v1")
	etag := `"` + hash(data) + `"`

	t.Run("v3 root", func(t *testing.T) {
		resp, body := get(t, srv.URL+"/openapi/v3")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(body) != string(s.V3Root()) {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("v3 with hash is immutable", func(t *testing.T) {
		var root struct {
			Paths map[string]struct{ ServerRelativeURL string } `json:"paths"`
		}
		if err := json.Unmarshal(s.V3Root(), &root); err != nil {
			t.Fatal(err)
		}
		resp, body := get(t, srv.URL+root.Paths["apis/apps/v1"].ServerRelativeURL)
		if resp.StatusCode != 200 || string(body) != string(data) {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if got := resp.Header.Get("Cache-Control"); got != "public, immutable" {
			t.Errorf("Cache-Control = %q", got)
		}
		if resp.Header.Get("Expires") == "" || resp.Header.Get("Etag") != etag {
			t.Errorf("Expires %q Etag %q", resp.Header.Get("Expires"), resp.Header.Get("Etag"))
		}
	})
	t.Run("v3 without hash is not immutable", func(t *testing.T) {
		resp, _ := get(t, srv.URL+"/openapi/v3/apis/apps/v1")
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "" || resp.Header.Get("Etag") != etag {
			t.Errorf("%d Cache-Control %q Etag %q", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Etag"))
		}
	})
	t.Run("v3 stale hash redirects", func(t *testing.T) {
		resp, _ := get(t, srv.URL+"/openapi/v3/apis/apps/v1?hash=OLD")
		if resp.StatusCode != http.StatusMovedPermanently || !strings.HasSuffix(resp.Header.Get("Location"), "/openapi/v3/apis/apps/v1?hash="+hash(data)) {
			t.Errorf("%d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("v3 if-none-match", func(t *testing.T) {
		resp, body := get(t, srv.URL+"/openapi/v3/apis/apps/v1", "If-None-Match", etag)
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("status %d, %d bytes", resp.StatusCode, len(body))
		}
	})

	tests := []struct {
		name, path, accept string
		status             int
		contentType        string
	}{
		{"v2 json by default", "/openapi/v2", "", 200, "application/json"},
		{"v2 json", "/openapi/v2", "application/json", 200, "application/json"},
		{"v2 protobuf", "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", 200, contentTypeProtobufV2},
		{"v2 protobuf preferred", "/openapi/v2", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf, application/json;q=0.5", 200, contentTypeProtobufV2},
		{"v2 not acceptable", "/openapi/v2", "text/html", 406, ""},
		{"v3 protobuf not served", "/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", 406, ""},
		{"v3 unknown group", "/openapi/v3/apis/nope/v1", "", 404, ""},
		{"other path", "/openapi/v4", "", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.accept != "" {
				hdr = []string{"Accept", tt.accept}
			}
			resp, body := get(t, srv.URL+tt.path, hdr...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.contentType != "" && resp.Header.Get("Content-Type") != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", resp.Header.Get("Content-Type"), tt.contentType)
			}
			if tt.contentType == contentTypeProtobufV2 {
				if _, err := openapi_v2.ParseDocument(s.V2()); err != nil {
					t.Fatal(err)
				}
				doc := &openapi_v2.Document{}
				if err := protoUnmarshal(body, doc); err != nil || doc.Swagger != "2.0" {
					t.Errorf("protobuf body: %v, swagger %q", err, doc.Swagger)
				}
			}
			if tt.path == "/openapi/v2" && tt.status == 200 && !strings.Contains(resp.Header.Get("Vary"), "Accept") {
				t.Errorf("Vary = %q", resp.Header.Get("Vary"))
			}
		})
	}

	t.Run("method not allowed", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/openapi/v2", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("status = %d", resp.StatusCode)
		}
	})
}

func TestServiceUpdate(t *testing.T) {
	first, err := New(testResources()[:2])
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(first)
	srv := serve(t, svc)
	if resp, _ := get(t, srv.URL+"/openapi/v3/apis/apps/v1"); resp.StatusCode != 404 {
		t.Fatalf("apps/v1 before update: %d", resp.StatusCode)
	}
	svc.Update(mustNew(t))
	if resp, _ := get(t, srv.URL+"/openapi/v3/apis/apps/v1"); resp.StatusCode != 200 {
		t.Fatalf("apps/v1 after update: %d", resp.StatusCode)
	}
}

// TestServiceRendersOnRequest: a Service holds no rendered documents until a client asks
// for one (they are several MB that an idle server need not keep).
func TestServiceRendersOnRequest(t *testing.T) {
	spec := mustNew(t)
	srv := serve(t, NewService(spec))
	if spec.v2 != nil || spec.v3 != nil {
		t.Fatal("documents rendered before any request")
	}
	resp, body := get(t, srv.URL+"/openapi/v2")
	if resp.StatusCode != 200 || len(body) == 0 {
		t.Fatalf("/openapi/v2: %d, %d bytes", resp.StatusCode, len(body))
	}
	if spec.v2 == nil || spec.v3 == nil {
		t.Fatal("documents not kept after the first request")
	}
}
