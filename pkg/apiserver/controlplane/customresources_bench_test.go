package controlplane_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BenchmarkCustomResourceVsConfigMap runs create, get and list of 100 objects through the
// store of a custom resource (JSON, schema validation, pruning, defaulting) and of
// ConfigMaps (protobuf), on one embedded etcd: compare the ns/op of the sub-benchmarks.
func BenchmarkCustomResourceVsConfigMap(b *testing.B) {
	r := newRegistry(b)
	ctx := context.Background()
	if _, err := store(r, "apiextensions.k8s.io", "customresourcedefinitions").Create(ctx, "", "", widgetCRD(), &metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "widgets served", func() bool { return r.Resource(widgets) != nil })
	kinds := []struct {
		name string
		gr   schema.GroupResource
		obj  func(i int) runtime.Object
	}{
		{"configmap", schema.GroupResource{Resource: "configmaps"}, func(i int) runtime.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("o%06d", i)}, Data: map[string]string{"color": "red"}}
		}},
		{"custom", widgets, func(i int) runtime.Object {
			return widget(fmt.Sprintf("o%06d", i), "red")
		}},
	}
	for _, k := range kinds {
		s := r.Resource(k.gr).Store
		n := 0
		b.Run("create/"+k.name, func(b *testing.B) {
			for range b.N {
				if _, err := s.Create(ctx, "default", "", k.obj(n), &metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
		b.Run("get/"+k.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := s.Get(ctx, "default", fmt.Sprintf("o%06d", i%n), &metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("list100/"+k.name, func(b *testing.B) {
			for range b.N {
				if _, err := s.List(ctx, "default", &metav1.ListOptions{Limit: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
