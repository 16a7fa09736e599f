package upstream_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// TestListJSONItemsAsKubeAPIServer: the items of a JSON list are what kube-apiserver 1.37
// sends for the same stored objects (one etcd, read by one server and then the other): a
// built-in kind's items carry no kind or apiVersion (the list names them once). Read at
// resourceVersion 0 (from the watch caches) and unset.
func TestListJSONItemsAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	ctx := context.Background()
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	dc := dynamic.NewForConfigOrDie(kas.config)
	ns := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := dc.Resource(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "lists"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, name := range []string{"a", "b"} {
		if _, err := dc.Resource(cms).Namespace("lists").Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "annotations": map[string]any{"x": "<y>"}}, "data": map[string]any{"k": "v&w"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{"/api/v1/namespaces/lists/configmaps", "/api/v1/namespaces/lists/configmaps?resourceVersion=0"}
	items := func(cfg *rest.Config) [][]any {
		t.Helper()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]any
		for _, p := range paths {
			req, _ := http.NewRequest(http.MethodGet, cfg.Host+p, nil)
			req.Header.Set("Accept", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var list struct{ Items []any }
			if err := json.Unmarshal(b, &list); err != nil || len(list.Items) != 2 {
				t.Fatalf("%s: %v, %d items\n%s", p, err, len(list.Items), b)
			}
			out = append(out, list.Items)
		}
		return out
	}
	want := items(kas.config)
	kas.stop(t)
	s, _ := startHacp(t, etcd.ClientURL())
	got := items(servertest.RestConfig(t, s))
	for i, p := range paths {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Errorf("%s items:\n%s\nkube-apiserver's:\n%s", p, g, w)
		}
	}
}
