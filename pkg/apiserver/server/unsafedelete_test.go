package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestUnsafeDeleteKinds: the unsafe deletion of a corrupt object is served through
// events.k8s.io/v1 as through the core Event it stores, and refused on a namespace with
// upstream's 500 (its namespace storage has no unsafe deleter), leaving it in place.
func TestUnsafeDeleteKinds(t *testing.T) {
	etcd := etcdtest.Start(t)
	s := servertest.New(t, func(cfg *server.Config) { cfg.EtcdServers = []string{etcd.ClientURL()} })
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ec, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ec.Close() })
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"/registry/namespaces/bad", "/registry/events/default/bad"} {
		if _, err := ec.Put(ctx, k, "k8s\x00not a protobuf object"); err != nil {
			t.Fatal(err)
		}
	}
	unsafe := metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}
	if err := cs.EventsV1().Events("default").Delete(ctx, "bad", unsafe); err != nil {
		t.Errorf("events.k8s.io/v1 unsafe delete: %v", err)
	}
	if _, err := cs.CoreV1().Events("default").Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("event after its unsafe deletion: %v, want NotFound", err)
	}
	err = cs.CoreV1().Namespaces().Delete(ctx, "bad", unsafe)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "no unsafe deleter provided, can not honor ignoreStoreReadErrorWithClusterBreakingPotential") {
		t.Errorf("namespace unsafe delete: %v, want upstream's 500", err)
	}
	if resp, err := ec.Get(ctx, "/registry/namespaces/bad"); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("the namespace's value is gone: %v %v", resp, err)
	}
}
