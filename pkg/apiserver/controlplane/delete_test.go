package controlplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
}

func grace(s int64) *metav1.DeleteOptions { return &metav1.DeleteOptions{GracePeriodSeconds: &s} }

// A pod on a node is deleted gracefully, as upstream: it gets a deletionTimestamp and stays
// until its node agent confirms with a zero grace period; a pod on no node goes at once.
func TestGracefulPodDeletion(t *testing.T) {
	r := newRegistry(t)
	pods := store(r, "", "pods")
	ctx := context.Background()
	for _, p := range []*corev1.Pod{pod("unbound", ""), pod("bound", "node-1")} {
		if _, err := pods.Create(ctx, "default", "", p, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, deleted, err := pods.Delete(ctx, "default", "unbound", nil); err != nil || !deleted {
		t.Fatalf("delete of a pod on no node: deleted=%v err=%v, want deleted at once", deleted, err)
	}

	before := time.Now()
	obj, deleted, err := pods.Delete(ctx, "default", "bound", nil)
	if err != nil || deleted {
		t.Fatalf("delete of a pod on a node: deleted=%v err=%v, want a graceful deletion", deleted, err)
	}
	p := obj.(*corev1.Pod)
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 30 || p.DeletionTimestamp == nil ||
		p.DeletionTimestamp.Time.Before(before.Add(29*time.Second)) {
		t.Fatalf("deletionTimestamp %v deletionGracePeriodSeconds %v: want about now+30s and 30", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}
	stored, err := pods.Get(ctx, "default", "bound", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts := stored.(*corev1.Pod).DeletionTimestamp.Time // as stored: to the second

	// Asking again, or for longer, changes nothing; the node agent can still update it.
	obj, deleted, err = pods.Delete(ctx, "default", "bound", grace(60))
	if err != nil || deleted || !obj.(*corev1.Pod).DeletionTimestamp.Time.Equal(ts) || *obj.(*corev1.Pod).DeletionGracePeriodSeconds != 30 {
		t.Fatalf("a longer grace period delayed the deletion: %v %v %v", obj.(*corev1.Pod).DeletionTimestamp, deleted, err)
	}
	status := obj.(*corev1.Pod).DeepCopy()
	status.Status.Phase = corev1.PodRunning
	statusStore := r.Resource(schema.GroupResource{Resource: "pods"}).Subresources["status"].(registry.Updater)
	if _, _, err := statusStore.Update(ctx, "default", "bound", put(status), &metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status update of a pod being deleted: %v", err)
	}
	if _, err := pods.Get(ctx, "default", "bound", &metav1.GetOptions{}); err != nil {
		t.Fatalf("a status update removed a pod waiting for its node agent: %v", err)
	}
	// A shorter one hurries it.
	obj, deleted, err = pods.Delete(ctx, "default", "bound", grace(5))
	if err != nil || deleted || *obj.(*corev1.Pod).DeletionGracePeriodSeconds != 5 || !obj.(*corev1.Pod).DeletionTimestamp.Time.Before(ts) {
		t.Fatalf("grace 5 after 30: %v %v %v", obj.(*corev1.Pod).DeletionGracePeriodSeconds, deleted, err)
	}
	// The node agent confirms.
	if _, deleted, err := pods.Delete(ctx, "default", "bound", grace(0)); err != nil || !deleted {
		t.Fatalf("grace 0: deleted=%v err=%v", deleted, err)
	}
	if _, err := pods.Get(ctx, "default", "bound", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod still there after its node agent confirmed: %v", err)
	}
}

// The propagation policy becomes the garbage collector's finalizers, as upstream: Foreground
// and Orphan leave the object with foregroundDeletion or orphan until the collector removes
// it; Background deletes at once.
func TestDeletePropagationFinalizers(t *testing.T) {
	r := newRegistry(t)
	cms := store(r, "", "configmaps")
	ctx := context.Background()
	policy := func(p metav1.DeletionPropagation) *metav1.DeleteOptions {
		return &metav1.DeleteOptions{PropagationPolicy: &p}
	}
	yes := true
	for _, tc := range []struct {
		name      string
		opts      *metav1.DeleteOptions
		finalizer string // "" = deleted at once
	}{
		{"background", policy(metav1.DeletePropagationBackground), ""},
		{"default", nil, ""},
		{"foreground", policy(metav1.DeletePropagationForeground), metav1.FinalizerDeleteDependents},
		{"orphan", policy(metav1.DeletePropagationOrphan), metav1.FinalizerOrphanDependents},
		{"orphandependents", &metav1.DeleteOptions{OrphanDependents: &yes}, metav1.FinalizerOrphanDependents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cms.Create(ctx, "default", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			obj, deleted, err := cms.Delete(ctx, "default", tc.name, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.finalizer == "" {
				if !deleted {
					t.Fatalf("not deleted at once: %v", obj)
				}
				return
			}
			cm := obj.(*corev1.ConfigMap)
			if deleted || cm.DeletionTimestamp == nil || !slices.Equal(cm.Finalizers, []string{tc.finalizer}) {
				t.Fatalf("deleted=%v deletionTimestamp=%v finalizers=%v, want it kept with %s", deleted, cm.DeletionTimestamp, cm.Finalizers, tc.finalizer)
			}
			// The garbage collector is done: it removes its finalizer, and the object goes.
			cm.Finalizers = nil
			if _, _, err := cms.Update(ctx, "default", tc.name, put(cm), &metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Get(ctx, "default", tc.name, &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("still there after its last finalizer went: %v", err)
			}
		})
	}
}

// A namespace with a pod on a node waits for the node agent, as upstream's namespace
// controller does, and goes once the pod is gone.
func TestNamespaceWaitsForGracefulPods(t *testing.T) {
	r := newRegistry(t)
	nss, pods := store(r, "", "namespaces"), store(r, "", "pods")
	ctx := context.Background()
	if _, err := nss.Create(ctx, "", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}}, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, "work", "", pod("p", "node-1"), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nss.Delete(ctx, "", "work", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		obj, err := pods.Get(ctx, "work", "p", &metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the pod went without its node agent's confirmation: %v", err)
		}
		if obj.(*corev1.Pod).DeletionTimestamp != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the namespace cleanup never asked to delete the pod")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := nss.Get(ctx, "", "work", &metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace went while its pod waits for its node agent: %v", err)
	}
	if _, _, err := pods.Delete(ctx, "work", "p", grace(0)); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		if _, err := nss.Get(ctx, "", "work", &metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the namespace stayed after its last pod was gone")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
