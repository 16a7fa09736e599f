package server_test

import (
	"context"
	"slices"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestNamespaceFinalizers: a deleted namespace is emptied and loses its "kubernetes"
// finalizer, but stays Terminating while another spec.finalizers entry or a
// metadata.finalizers entry holds it; it goes when the last one is removed, through
// namespaces/finalize or a plain update respectively. While content waits for its
// graceful deletion, the namespace says so in upstream's NamespaceContentRemaining.
func TestNamespaceFinalizers(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	nss := cs.CoreV1().Namespaces()
	const hold = "example.com/hold"

	t.Run("spec finalizer, removed through finalize", func(t *testing.T) {
		ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spec-held", Finalizers: []string{hold}},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{hold}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []corev1.FinalizerName{hold, corev1.FinalizerKubernetes}; !slices.Equal(ns.Spec.Finalizers, want) {
			t.Fatalf("spec.finalizers %v after create, want %v", ns.Spec.Finalizers, want)
		}
		// A plain update does not change spec.finalizers (only finalize does).
		ns.Spec.Finalizers = nil
		if ns, err = nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil || len(ns.Spec.Finalizers) != 2 {
			t.Fatalf("update: spec.finalizers %v, %v; want them unchanged", ns.Spec.Finalizers, err)
		}
		deleteEmptied(t, cs, "spec-held")
		ns = mustGetNamespace(t, cs, "spec-held")
		if !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{hold}) {
			t.Fatalf("spec.finalizers %v once emptied, want only %s", ns.Spec.Finalizers, hold)
		}
		// Its metadata finalizer goes: spec.finalizers still hold it.
		ns.Finalizers = nil
		if _, err = nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if ns = mustGetNamespace(t, cs, "spec-held"); len(ns.Finalizers) != 0 {
			t.Fatalf("metadata.finalizers %v after the update removed them", ns.Finalizers)
		}
		ns.Spec.Finalizers = nil
		if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitNamespaceGone(t, cs, "spec-held")
	})

	t.Run("metadata finalizer, removed by an update", func(t *testing.T) {
		_, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "meta-held", Finalizers: []string{hold}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deleteEmptied(t, cs, "meta-held")
		ns := mustGetNamespace(t, cs, "meta-held")
		if len(ns.Spec.Finalizers) != 0 || !slices.Equal(ns.Finalizers, []string{hold}) {
			t.Fatalf("once emptied: spec.finalizers %v, metadata.finalizers %v", ns.Spec.Finalizers, ns.Finalizers)
		}
		ns.Finalizers = nil
		if _, err := nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitNamespaceGone(t, cs, "meta-held")
	})

	t.Run("content waiting for its graceful deletion", func(t *testing.T) {
		_, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
		eventually(t, "the pod created", func() bool { // (once the default service account is there)
			_, err := cs.CoreV1().Pods("pending").Create(ctx, pod, metav1.CreateOptions{})
			return err == nil
		})
		if err := nss.Delete(ctx, "pending", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "NamespaceContentRemaining true", func() bool {
			c := namespaceCondition(t, cs, "pending", corev1.NamespaceContentRemaining)
			return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "SomeResourcesRemain" &&
				c.Message == "Some resources are remaining: pods. has 1 resource instances"
		})
		// The node agent confirms the deletion: the namespace goes.
		if err := cs.CoreV1().Pods("pending").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		waitNamespaceGone(t, cs, "pending")
	})

	t.Run("invalid spec finalizer", func(t *testing.T) {
		_, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"no-domain"}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create with spec.finalizers [no-domain]: %v, want 422", err)
		}
	})
}

// deleteEmptied creates a ConfigMap in ns, deletes ns and waits until the cleanup has
// removed the ConfigMap and the "kubernetes" finalizer, checking the namespace is
// Terminating with upstream's conditions.
func deleteEmptied(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ns+" emptied and finalized by the cleanup", func() bool {
		n := mustGetNamespace(t, cs, ns)
		return !slices.Contains(n.Spec.Finalizers, corev1.FinalizerKubernetes)
	})
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "content", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("content left in the finalized namespace: %v", err)
	}
	n := mustGetNamespace(t, cs, ns)
	if n.Status.Phase != corev1.NamespaceTerminating || n.DeletionTimestamp == nil {
		t.Fatalf("phase %s, deletionTimestamp %v: want Terminating", n.Status.Phase, n.DeletionTimestamp)
	}
	for _, want := range []corev1.NamespaceConditionType{corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceDeletionGVParsingFailure,
		corev1.NamespaceDeletionContentFailure, corev1.NamespaceContentRemaining, corev1.NamespaceFinalizersRemaining} {
		if c := namespaceCondition(t, cs, ns, want); c == nil || c.Status != corev1.ConditionFalse {
			t.Fatalf("condition %s: %+v, want False", want, c)
		}
	}
}

func mustGetNamespace(t *testing.T, cs kubernetes.Interface, name string) *corev1.Namespace {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	return ns
}

func namespaceCondition(t *testing.T, cs kubernetes.Interface, name string, typ corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	t.Helper()
	for _, c := range mustGetNamespace(t, cs, name).Status.Conditions {
		if c.Type == typ {
			return &c
		}
	}
	return nil
}

func waitNamespaceGone(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	eventually(t, name+" removed", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
