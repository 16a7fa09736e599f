package server_test

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestAdmissionNodeRestriction: with NodeRestriction on, a kubelet's credentials
// (system:node:n1 in system:nodes) reach only its own Node and the pods bound to it. The
// server authorizes everything (AlwaysAllow), so that what is refused is admission's doing
// (the Node authorizer refuses much of it first otherwise).
func TestAdmissionNodeRestriction(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) {
		c.EnableAdmissionPlugins = []string{"NodeRestriction"}
		c.AuthorizationMode, c.AnonymousAuth = "AlwaysAllow", false
	})
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	_, rc := userConfig(t, s, "system:node:n1", "system:nodes")
	kubelet := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	for _, n := range []string{"n1", "n2"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	forbidden := func(t *testing.T, err error, want string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("err %v, want 403 %q", err, want)
		}
	}
	label := func(node, kv string) error {
		_, err := kubelet.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"metadata":{"labels":{`+kv+`}}}`), metav1.PatchOptions{})
		return err
	}
	t.Run("nodes", func(t *testing.T) {
		if err := label("n1", `"example.com/role":"web"`); err != nil {
			t.Fatalf("own node: %v", err)
		}
		forbidden(t, label("n2", `"example.com/role":"web"`), `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`)
		forbidden(t, label("n1", `"node-restriction.kubernetes.io/tier":"gold"`), `nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/tier`)
		_, err := kubelet.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`), metav1.PatchOptions{})
		forbidden(t, err, `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`)
	})
	t.Run("pods", func(t *testing.T) {
		mirror := func(name, node string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		}
		plain := mirror("plain", "n1")
		plain.Annotations = nil
		_, err := kubelet.CoreV1().Pods("default").Create(ctx, plain, metav1.CreateOptions{})
		forbidden(t, err, `pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`)
		_, err = kubelet.CoreV1().Pods("default").Create(ctx, mirror("elsewhere", "n2"), metav1.CreateOptions{})
		forbidden(t, err, `pods "elsewhere" is forbidden: node "n1" can only create pods with spec.nodeName set to itself`)
		if _, err := kubelet.CoreV1().Pods("default").Create(ctx, mirror("mine", "n1"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("own mirror pod: %v", err)
		}
		// A pod the admin bound to n2: n1 may not touch its status nor delete it.
		other := mirror("other", "n2")
		other.Annotations = nil
		other, err = admin.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other.Status.Message = "from n1"
		_, err = kubelet.CoreV1().Pods("default").UpdateStatus(ctx, other, metav1.UpdateOptions{})
		forbidden(t, err, `pods "other" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`)
		forbidden(t, kubelet.CoreV1().Pods("default").Delete(ctx, "other", metav1.DeleteOptions{}),
			`pods "Unknown" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`)
		if err := kubelet.CoreV1().Pods("default").Delete(ctx, "mine", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("own pod delete: %v", err)
		}
	})
}
