package registry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestManagedFieldsBefore: what admission may have to put back is what GetManagedFields
// returned before admission, whatever admission did to the object meanwhile.
func TestManagedFieldsBefore(t *testing.T) {
	entry := map[string]any{"manager": "creator", "operation": "Update", "apiVersion": "bench.example.com/v1",
		"time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{"f:key": map[string]any{}}}}
	tests := []struct {
		name     string
		metadata map[string]any
	}{
		{"entries", map[string]any{"managedFields": []any{entry}}},
		{"none", map[string]any{}},
		{"undecodable", map[string]any{"managedFields": []any{"not a map"}}},
		{"not a list", map[string]any{"managedFields": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": tt.metadata}}
			want := u.GetManagedFields()
			before, unchanged := managedFieldsBefore(u, u)
			// Not a list: counted as changed, so that the validation reports it.
			if _, notList := tt.metadata["managedFields"].(string); unchanged() == notList {
				t.Fatalf("unchanged() before admission = %v", !notList)
			}
			// Admission changes the entries in place, then replaces them.
			if items, ok := tt.metadata["managedFields"].([]any); ok && len(items) > 0 {
				if m, ok := items[0].(map[string]any); ok {
					m["manager"] = "changed"
					if unchanged() {
						t.Fatal("an entry changed in place counts as unchanged")
					}
				}
			}
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "hook", Operation: "Mangle"}})
			if unchanged() {
				t.Fatal("replaced entries count as unchanged")
			}
			if got := before(); !reflect.DeepEqual(got, want) {
				t.Fatalf("before() = %+v, want %+v", got, want)
			}
		})
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "creator", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	before, unchanged := managedFieldsBefore(cm, cm)
	if !unchanged() {
		t.Fatal("typed: changed before admission")
	}
	cm.ManagedFields[0].Manager = "changed"
	if unchanged() {
		t.Fatal("typed: an entry changed in place counts as unchanged")
	}
	cm.ManagedFields = nil
	if got := before(); len(got) != 1 || got[0].Manager != "creator" {
		t.Fatalf("typed: before() = %+v", got)
	}
	if unchanged() {
		t.Fatal("typed: removed entries count as unchanged")
	}
}
