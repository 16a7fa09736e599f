package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestHasKind: the shortcut of setKind says yes only where parsing the object's apiVersion
// gives the store's kind.
func TestHasKind(t *testing.T) {
	custom := schema.GroupVersionKind{Group: "bench.example.com", Version: "v1", Kind: "BenchObject"}
	core := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	tests := []struct {
		name       string
		gvk        schema.GroupVersionKind
		apiVersion any
		kind       any
	}{
		{"custom", custom, "bench.example.com/v1", "BenchObject"},
		{"core", core, "v1", "ConfigMap"},
		{"other version", custom, "bench.example.com/v2", "BenchObject"},
		{"other group of the same length", custom, "bench.example.org/v1", "BenchObject"},
		{"no slash", custom, "bench.example.comxv1", "BenchObject"},
		{"version only", custom, "v1", "BenchObject"},
		{"group on a core kind", core, "apps/v1", "ConfigMap"},
		{"other kind", custom, "bench.example.com/v1", "Other"},
		{"missing", custom, nil, nil},
		{"not strings", custom, 1, true},
		{"extra slash", custom, "bench.example.com/v1/", "BenchObject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := map[string]any{}
			if tt.apiVersion != nil {
				obj["apiVersion"] = tt.apiVersion
			}
			if tt.kind != nil {
				obj["kind"] = tt.kind
			}
			parsed := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
			if got := hasKind(obj, tt.gvk); got != (parsed == tt.gvk) {
				t.Fatalf("hasKind = %v, but the object parses as %v", got, parsed)
			}
		})
	}
}
