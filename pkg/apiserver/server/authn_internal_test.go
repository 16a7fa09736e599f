package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The extension-apiserver-authentication ConfigMap comes back with the CA after it is deleted
// or edited, as upstream's controller restores it.
func TestClientCAConfigMapResync(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.SecurePort, cfg.ShutdownDelay, cfg.EtcdUnsafeNoFsync = t.TempDir(), 0, 0, true
	var err error
	if cfg.EtcdListenClientURL, err = embedetcd.FreeLocalHTTPSURL(); err != nil {
		t.Fatal(err)
	}
	if cfg.EtcdListenPeerURL, err = embedetcd.FreeLocalURL(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.clientCAResync = 20 * time.Millisecond
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
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
	_, _, err = cms.Update(ctx, metav1.NamespaceSystem, AuthenticationConfigMap, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
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
