package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestLimitRangerPodAndClaim: LimitRanges of type Pod (the containers' sum) and
// PersistentVolumeClaim (the storage request), and maxLimitRequestRatio, refuse with
// upstream's messages through client-go.
func TestLimitRangerPodAndClaim(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	const ns = "limits"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "default service account", func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	q := resource.MustParse
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceCPU: q("1")}, MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceMemory: q("2")}},
		{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceCPU: q("4")}},
		{Type: corev1.LimitTypePersistentVolumeClaim, Min: corev1.ResourceList{corev1.ResourceStorage: q("1Gi")}, Max: corev1.ResourceList{corev1.ResourceStorage: q("5Gi")}},
	}}}
	if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q(size)}}}}
	}
	eventuallyOK(t, "LimitRange in the plugin's cache", func() error {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("big", "10Gi"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("admitted")
		}
		wantForbiddenMessage(t, err, `persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi`)
		return nil
	})
	_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("small", "500Mi"), metav1.CreateOptions{})
	wantForbiddenMessage(t, err, `persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`)
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("fits", "2Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	container := func(name, cpuReq, cpuLim, memReq, memLim string) corev1.Container {
		return corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q(cpuReq), corev1.ResourceMemory: q(memReq)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q(cpuLim), corev1.ResourceMemory: q(memLim)}}}
	}
	pod := func(name string, cs ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: cs}}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod("sum", container("a", "200m", "600m", "100Mi", "200Mi"), container("b", "200m", "600m", "100Mi", "200Mi")),
			`pods "sum" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m`},
		{pod("ratio", container("a", "100m", "500m", "100Mi", "200Mi")),
			`pods "ratio" is forbidden: cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000`},
		{pod("podratio", container("a", "100m", "200m", "100Mi", "150Mi"), container("b", "100m", "200m", "100Mi", "300Mi")),
			`pods "podratio" is forbidden: memory max limit to request ratio per Pod is 2, but provided ratio is 2.250000`},
	} {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, tc.pod, metav1.CreateOptions{})
		wantForbiddenMessage(t, err, tc.want)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod("fits", container("a", "200m", "600m", "100Mi", "200Mi")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
