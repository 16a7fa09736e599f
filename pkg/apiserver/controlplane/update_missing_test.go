package controlplane_test

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestUpdateOfMissingObjectIsNotFound: an update (spec or status) of an object that does not
// exist, on a kind that is not created by update, is NotFound before the transform runs, as
// upstream's Store.Update checks; a transform never sees nil there. (The aggregator's
// condition writer type-asserted nil and crashed the server when an APIService was deleted
// under it.)
func TestUpdateOfMissingObjectIsNotFound(t *testing.T) {
	c := etcdtest.Client(t)
	ctx := context.Background()
	for _, plural := range []string{"configmaps", "pods"} {
		var kind *registry.Kind
		for _, k := range controlplane.Kinds() {
			if k.Plural == plural {
				kind = k
			}
		}
		codec, err := registry.StorageCodec("", kind)
		if err != nil {
			t.Fatal(err)
		}
		s := registry.NewStore(kind, storage.New(c, storage.Config{Prefix: "/registry", Codec: codec, NewFunc: kind.New}), nil)
		transform := func(_ context.Context, obj runtime.Object) (runtime.Object, error) {
			t.Errorf("%s: transform called with %v for a missing object", plural, obj)
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "ns"}}, nil
		}
		if _, _, err := s.Update(ctx, "ns", "missing", transform, &metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: update of a missing object: %v, want NotFound", plural, err)
		}
		if plural == "pods" {
			if _, _, err := s.UpdateStatus(ctx, "ns", "missing", transform, &metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: status update of a missing object: %v, want NotFound", plural, err)
			}
		}
	}
}
