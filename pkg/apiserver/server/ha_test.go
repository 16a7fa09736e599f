package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestStackedCluster runs three apiservers, each with its own embedded etcd
// member of one cluster (the kubeadm stacked layout): a write through one is
// read and watched through the others, and the cluster keeps serving when
// one master is gone.
func TestStackedCluster(t *testing.T) {
	servers := servertest.NewStacked(t, 3)
	clients := make([]kubernetes.Interface, 3)
	for i, s := range servers {
		clients[i] = kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	}
	ctx := context.Background()

	list, err := clients[1].CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := clients[1].CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, TimeoutSeconds: ptr.To(int64(30))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := clients[0].CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := clients[2].CoreV1().ConfigMaps("default").Get(ctx, "shared", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("read through another master: %v %v", got, err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "shared" {
			t.Fatalf("watch through another master: %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event through another master")
	}

	// One master goes away: the other two still have quorum.
	if err := servers[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[1].CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-loss"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("write with two of three members: %v", err)
	}
	if _, err := clients[0].CoreV1().ConfigMaps("default").Get(ctx, "after-loss", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, servers[0])
	if resp, body := e.do(e.anonymous, "GET", "/healthz?verbose", "", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("healthz with quorum: %d %s", resp.StatusCode, body)
	}
}
