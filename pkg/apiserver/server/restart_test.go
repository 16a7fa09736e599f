package server_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRestartKeepsData: objects, certificates and the kubeconfig survive a restart on the same data dir.
func TestRestartKeepsData(t *testing.T) {
	cfg, err := servertest.Config(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := servertest.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(cfg.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s, err = servertest.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	ca2, err := os.ReadFile(filepath.Join(cfg.DataDir, "pki", "ca.crt"))
	if err != nil || !bytes.Equal(ca, ca2) {
		t.Fatalf("CA regenerated on restart (%v)", err)
	}
	cs = kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("object lost across restart: %v", err)
	}
}
