package main

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cm(ns, name string) objRef  { return objRef{Resource: "configmaps", Namespace: ns, Name: name} }
func sec(ns, name string) objRef { return objRef{Resource: "secrets", Namespace: ns, Name: name} }

// TestPodRefs: a pod's secret, configMap and projected volumes' objects, once each, in
// the pod's namespace; other volumes and empty names are no references.
func TestPodRefs(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dep-1"}}}},
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dep-1"}}},
		{Name: "again", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dep-1"}}},
		{Name: "empty", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
		}}}},
	}}}
	want := []objRef{cm("ns", "dep-1"), sec("ns", "dep-1"), cm("ns", "kube-root-ca.crt"), sec("ns", "extra")}
	if got := podRefs(p); !reflect.DeepEqual(got, want) {
		t.Errorf("podRefs = %v, want %v", got, want)
	}
	if got := podRefs(&corev1.Pod{}); got == nil || len(got) != 0 {
		t.Errorf("podRefs of a pod without volumes = %#v, want empty and not nil", got)
	}
}

// TestVolumeRefs: an object's watch starts with the first pod on the node mounting it and
// stops when no pod mounts it, across watch events and re-lists.
func TestVolumeRefs(t *testing.T) {
	v := newVolumeRefs()
	a, b := cm("ns", "a"), sec("ns", "a")
	root := cm("ns", "kube-root-ca.crt")
	steps := []struct {
		name        string
		changes     map[types.UID][]objRef
		replace     bool
		start, stop []objRef
		pods        int
	}{
		{"the first pod starts its objects", map[types.UID][]objRef{"p1": {a, b, root}}, false, []objRef{a, root, b}, nil, 1},
		{"second pod of the same Deployment starts nothing", map[types.UID][]objRef{"p2": {a, b, root}}, false, nil, nil, 2},
		{"a modified pod keeps its objects", map[types.UID][]objRef{"p2": {a, b, root}}, false, nil, nil, 2},
		{"one pod deleted: still mounted", map[types.UID][]objRef{"p1": nil}, false, nil, nil, 1},
		{"a pod without volumes is on the node", map[types.UID][]objRef{"p3": {}}, false, nil, nil, 2},
		{"a pod of another Deployment", map[types.UID][]objRef{"p4": {cm("ns", "b"), root}}, false, []objRef{cm("ns", "b")}, nil, 3},
		{"last pod mounting a deleted", map[types.UID][]objRef{"p2": nil}, false, nil, []objRef{a, b}, 2},
		{"deleting an unknown pod changes nothing", map[types.UID][]objRef{"p9": nil}, false, nil, nil, 2},
		{"a re-list replaces the pods", map[types.UID][]objRef{"p5": {a}, "p3": {}}, true, []objRef{a}, []objRef{cm("ns", "b"), root}, 2},
		{"an empty re-list stops all", map[types.UID][]objRef{}, true, nil, []objRef{a}, 0},
	}
	for _, s := range steps {
		start, stop := v.update(s.changes, s.replace)
		if !reflect.DeepEqual(start, s.start) || !reflect.DeepEqual(stop, s.stop) {
			t.Errorf("%s: start %v stop %v, want start %v stop %v", s.name, start, stop, s.start, s.stop)
		}
		if len(v.pods) != s.pods {
			t.Errorf("%s: %d pods, want %d", s.name, len(v.pods), s.pods)
		}
	}
	if len(v.count) != 0 {
		t.Errorf("counts left after the last pod: %v", v.count)
	}
}
