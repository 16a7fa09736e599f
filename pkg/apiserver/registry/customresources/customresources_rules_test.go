package customresources

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func customObject(spec, status any, labels map[string]string, manager string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": spec}}
	if status != nil {
		u.Object["status"] = status
	}
	u.SetName("w")
	u.SetLabels(labels)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate}})
	return u
}

// TestCustomStatusRules: a main-resource write keeps the stored status (or its absence); a
// status write takes only status (or its absence) and its own managedFields.
func TestCustomStatusRules(t *testing.T) {
	stored := customObject(map[string]any{"size": int64(1)}, map[string]any{"ready": true}, map[string]string{"a": "1"}, "stored")
	tests := []struct {
		name       string
		rule       func(obj, old runtime.Object)
		old, write *unstructured.Unstructured
		want       *unstructured.Unstructured
	}{
		{"main keeps status", keepCustomStatus, stored,
			customObject(map[string]any{"size": int64(2)}, map[string]any{"ready": false}, map[string]string{"a": "2"}, "writer"),
			customObject(map[string]any{"size": int64(2)}, map[string]any{"ready": true}, map[string]string{"a": "2"}, "writer")},
		{"main keeps no status", keepCustomStatus, customObject(map[string]any{"size": int64(1)}, nil, nil, "stored"),
			customObject(map[string]any{"size": int64(2)}, map[string]any{"ready": false}, nil, "writer"),
			customObject(map[string]any{"size": int64(2)}, nil, nil, "writer")},
		{"status takes status", takeCustomStatus, stored,
			customObject(map[string]any{"size": int64(2)}, map[string]any{"ready": false}, map[string]string{"a": "2"}, "writer"),
			customObject(map[string]any{"size": int64(1)}, map[string]any{"ready": false}, map[string]string{"a": "1"}, "writer")},
		{"status takes no status", takeCustomStatus, stored,
			customObject(map[string]any{"size": int64(2)}, nil, nil, "writer"),
			customObject(map[string]any{"size": int64(1)}, nil, map[string]string{"a": "1"}, "writer")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.old.DeepCopy()
			tt.rule(tt.write, old)
			if !reflect.DeepEqual(tt.write.Object, tt.want.Object) {
				t.Fatalf("got  %v\nwant %v", tt.write.Object, tt.want.Object)
			}
		})
	}
}

// TestCustomSpecChanged: anything outside metadata counts for the generation; status only
// without the status subresource.
func TestCustomSpecChanged(t *testing.T) {
	base := customObject(map[string]any{"size": int64(1)}, map[string]any{"ready": true}, nil, "m")
	change := func(fn func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := base.DeepCopy()
		fn(u)
		return u
	}
	tests := []struct {
		name                string
		obj                 *unstructured.Unstructured
		withStatus, without bool
	}{
		{"nothing", base.DeepCopy(), false, false},
		{"spec", change(func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"size": int64(2)} }), true, true},
		{"top-level field added", change(func(u *unstructured.Unstructured) { u.Object["data"] = "x" }), true, true},
		{"spec removed", change(func(u *unstructured.Unstructured) { delete(u.Object, "spec") }), true, true},
		{"status", change(func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"ready": false} }), false, true},
		{"labels", change(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }), false, false},
		{"apiVersion", change(func(u *unstructured.Unstructured) { u.SetAPIVersion("example.com/v2") }), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := customSpecChanged(true)(tt.obj, base); got != tt.withStatus {
				t.Errorf("with the status subresource: %v, want %v", got, tt.withStatus)
			}
			if got := customSpecChanged(false)(tt.obj, base); got != tt.without {
				t.Errorf("without the status subresource: %v, want %v", got, tt.without)
			}
		})
	}
}
