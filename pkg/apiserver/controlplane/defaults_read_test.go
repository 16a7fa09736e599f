package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDefaultsOnRead: objects another writer stored without the fields defaults fill (as
// kube-apiserver stores a Job's labels and a claim's phase) read with them, through get,
// list and watch, as kube-apiserver's storage decoder defaults them.
func TestDefaultsOnRead(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	put := func(resource, key string, obj runtime.Object) {
		t.Helper()
		var kind *registry.Kind
		for _, k := range controlplane.Kinds() {
			if k.Plural == resource && k.StorageOf == nil {
				kind = k
			}
		}
		codec, err := registry.StorageCodec("", kind) // encodes as is: no defaults
		if err != nil {
			t.Fatal(err)
		}
		data, err := codec.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.EtcdClientForTest().Put(ctx, "/registry/"+key, string(data)); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "j"}
	put("jobs", "jobs/default/j", &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "u1"},
		Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}})
	put("persistentvolumeclaims", "persistentvolumeclaims/default/c", &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", UID: "u2"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})

	obj, err := store(r, "batch", "jobs").Get(ctx, "default", "j", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job := obj.(*batchv1.Job)
	if job.Labels["app"] != "j" || job.Spec.Completions == nil || *job.Spec.Completions != 1 || job.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatalf("job read without its defaults: labels %v, completions %v, dnsPolicy %q", job.Labels, job.Spec.Completions, job.Spec.Template.Spec.DNSPolicy)
	}
	list, err := store(r, "", "persistentvolumeclaims").List(ctx, "default", &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := list.(*corev1.PersistentVolumeClaimList).Items
	if len(items) != 1 || items[0].Status.Phase != corev1.ClaimPending || items[0].Spec.VolumeMode == nil || *items[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Fatalf("claims listed without their defaults: %+v", items)
	}
	w, err := store(r, "", "persistentvolumeclaims").Watch(ctx, "default", &metav1.ListOptions{ResourceVersion: list.(*corev1.PersistentVolumeClaimList).ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	put("persistentvolumeclaims", "persistentvolumeclaims/default/d", &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default", UID: "u3"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	select {
	case ev := <-w.ResultChan():
		if pvc, ok := ev.Object.(*corev1.PersistentVolumeClaim); !ok || pvc.Name != "d" || pvc.Status.Phase != corev1.ClaimPending {
			t.Fatalf("watched claim without its defaults: %s %+v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the claim")
	}
}
