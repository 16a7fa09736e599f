package server

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The extension-apiserver-authentication ConfigMap comes back with the CA after it is deleted
// or edited, as upstream's controller restores it.
func TestClientCAConfigMapResync(t *testing.T) {
	s := startInternal(t, func(s *Server) { s.clientCAResync = 20 * time.Millisecond })
	ctx := context.Background()
	cms := s.registry.Resource(schema.GroupResource{Resource: "configmaps"}).Store
	ca := string(s.bundle.CAPEM)
	published := func() bool {
		obj, err := cms.Get(ctx, metav1.NamespaceSystem, AuthenticationConfigMap, &metav1.GetOptions{})
		return err == nil && obj.(*corev1.ConfigMap).Data["client-ca-file"] == ca
	}
	waitFor(t, "the ConfigMap with the CA", published)
	if _, _, err := cms.Delete(ctx, metav1.NamespaceSystem, AuthenticationConfigMap, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted ConfigMap back", published)
	_, _, err := cms.Update(ctx, metav1.NamespaceSystem, AuthenticationConfigMap, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		cm.Data["client-ca-file"] = "edited"
		return cm, nil
	}, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the edited ConfigMap restored", published)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
