package controlplane_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// racingStorage runs before, once, when the store starts deleting: another writer acting
// between whatever the store read before and the deletion itself.
type racingStorage struct {
	storage.Interface
	once   sync.Once
	before func()
}

func (r *racingStorage) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	r.once.Do(r.before)
	return r.Interface.Delete(ctx, key, out, precond, validate)
}

// TestDeleteSeesAFinalizerAddedConcurrently: a finalizer added while a delete is under way
// holds the object (it is marked for deletion, not removed), because the deletion is
// conditioned on the revision its finalizer check read.
func TestDeleteSeesAFinalizerAddedConcurrently(t *testing.T) {
	c := etcdtest.Client(t)
	var kind *registry.Kind
	for _, k := range controlplane.Kinds() {
		if k.Plural == "configmaps" {
			kind = k
		}
	}
	codec, err := registry.StorageCodec("", kind)
	if err != nil {
		t.Fatal(err)
	}
	etcd := storage.New(c, storage.Config{Prefix: "/registry", Codec: codec, NewFunc: kind.New})
	ctx := context.Background()
	addFinalizer := func() {
		err := etcd.GuaranteedUpdate(ctx, "configmaps/ns/f", &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.ConfigMap).Finalizers = []string{"example.com/hold"}
			return cur, nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	s := registry.NewStore(kind, &racingStorage{Interface: etcd, before: addFinalizer}, nil)
	if _, err := s.Create(ctx, "ns", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, deleted, err := s.Delete(ctx, "ns", "f", &metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "ns", "f", &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deleted despite its finalizer (answered deleted=%v): %v", deleted, err)
	}
	if cm := got.(*corev1.ConfigMap); deleted || cm.DeletionTimestamp == nil || len(cm.Finalizers) != 1 || obj.(*corev1.ConfigMap).DeletionTimestamp == nil {
		t.Fatalf("answered deleted=%v; stored %v", deleted, cm.ObjectMeta)
	}
}
