package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSystemNamespacesRecreated: a deleted system namespace comes back without a restart,
// as upstream's system-namespaces controller makes it (here checking every 50ms):
// kube-node-lease deleted through the API (once its cleanup removed it), and the ones the
// API refuses to delete removed from etcd behind the apiserver's back.
func TestSystemNamespacesRecreated(t *testing.T) {
	c := etcdtest.Client(t)
	r := controlplane.New(c, controlplane.Config{SystemNamespacesInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.Wait() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	nss := store(r, "", "namespaces")
	for _, tc := range []struct {
		name   string
		viaAPI bool
	}{
		{corev1.NamespaceNodeLease, true},
		{metav1.NamespacePublic, false},
		{metav1.NamespaceSystem, false},
		{metav1.NamespaceDefault, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := nss.Get(ctx, "", tc.name, &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			oldUID := obj.(*corev1.Namespace).UID
			if tc.viaAPI {
				if _, _, err := nss.Delete(ctx, "", tc.name, &metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := c.Delete(ctx, "/registry/namespaces/"+tc.name); err != nil {
				t.Fatal(err)
			}
			waitRecreated(t, nss, tc.name, oldUID)
		})
	}
}

// waitRecreated polls until namespace name is there again, active, as a new object.
func waitRecreated(t *testing.T, nss *registry.Store, name string, oldUID types.UID) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		obj, err := nss.Get(context.Background(), "", name, &metav1.GetOptions{})
		if err == nil {
			ns := obj.(*corev1.Namespace)
			if ns.UID != oldUID && ns.DeletionTimestamp == nil && ns.Status.Phase == corev1.NamespaceActive {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s not created again: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond) // poll
	}
}
