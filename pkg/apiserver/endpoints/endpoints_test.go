package endpoints_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// A custom (unstructured) kind in the custom-resource key layout: strategic
// merge patch is refused with 415, merge and JSON patch work.
func TestCustomKindPatch(t *testing.T) {
	c := etcdtest.Client(t)
	kind := &registry.Kind{
		Names:   registry.Names{Group: "example.com", Version: "v1", Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget", Namespaced: true},
		New:     func() runtime.Object { return &unstructured.Unstructured{} },
		NewList: func() runtime.Object { return &unstructured.UnstructuredList{} },
		KeyRoot: "example.com/widgets",
	}
	st := storage.New(c, storage.Config{Prefix: "/registry", NewFunc: kind.New})
	store := registry.NewStore(kind, st, func(context.Context, string) error { return nil })
	container := restful.NewContainer()
	container.ServiceErrorHandler(endpoints.NotFoundHandler)
	(&endpoints.Installer{}).Install(container, []endpoints.Resource{{Names: &kind.Names, Storage: store}})
	ts := httptest.NewServer(container)
	t.Cleanup(ts.Close)

	do := func(method, path, ct, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, bytes.NewBufferString(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	base := "/apis/example.com/v1/namespaces/default/widgets"
	if code, body := do("POST", base, "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	if resp, err := c.Get(context.Background(), "/registry/example.com/widgets/default/w"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("custom-resource key layout: %v", err)
	}
	tests := []struct {
		name, ct, patch string
		code            int
		want            string
	}{
		{"strategic refused", "application/strategic-merge-patch+json", `{"spec":{"size":2}}`, 415, `"reason":"UnsupportedMediaType"`},
		{"merge", "application/merge-patch+json", `{"spec":{"size":3}}`, 200, `"size":3`},
		{"json", "application/json-patch+json", `[{"op":"replace","path":"/spec/size","value":4}]`, 200, `"size":4`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do("PATCH", base+"/w", tc.ct, tc.patch)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s", code, body)
			}
		})
	}
	if code, body := do("GET", "/apis/example.com/v1/widgets", "", ""); code != 200 || !strings.Contains(body, `"kind":"WidgetList"`) {
		t.Fatalf("list all namespaces: %d %s", code, body)
	}
}
