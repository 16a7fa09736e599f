package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// featurePod is a pod bound to node with pod-level cpu requests podCPU (none when ""), a
// non-sidecar init container, a sidecar and a container, each requesting initCPU, sideCPU
// and 1 cpu.
func featurePod(node, podCPU, initCPU, sideCPU string, generation int64) *corev1.Pod {
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod", Namespace: "default", Generation: generation},
		Spec: corev1.PodSpec{NodeName: node,
			InitContainers: []corev1.Container{{Name: "init", Resources: cpu(initCPU)}, {Name: "sidecar", RestartPolicy: &always, Resources: cpu(sideCPU)}},
			Containers:     []corev1.Container{{Name: "main", Resources: cpu("1")}}}}
	if podCPU != "" {
		r := cpu(podCPU)
		p.Spec.Resources = &r
	}
	return p
}

func featureNode(name string, declared ...string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{DeclaredFeatures: declared}}
}

// TestNodeDeclaredFeatureValidator follows upstream's TestAdmission with upstream's own
// feature list: an update of a bound pod that resizes pod-level resources or a non-sidecar
// init container needs the node to declare that feature; one needing nothing, a status
// write, an unbound pod or an unchanged generation is not checked.
func TestNodeDeclaredFeatureValidator(t *testing.T) {
	p := NewNodeDeclaredFeatureValidator(nodeFactory(t,
		featureNode("full", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"),
		featureNode("bare"), featureNode("other", "SomethingElse")))
	for _, tc := range []struct {
		name        string
		subresource string
		old, pod    *corev1.Pod
		want        string
	}{
		{"no feature needed", "", featurePod("bare", "", "1", "1", 1), featurePod("bare", "", "1", "1", 2), "ok"},
		{"no feature needed, unknown node", "resize", featurePod("gone", "", "1", "1", 1), featurePod("gone", "", "1", "1", 2), "ok"},
		{"sidecar resize needs no feature", "resize", featurePod("bare", "", "1", "1", 1), featurePod("bare", "", "1", "2", 2), "ok"},
		{"pod-level resize on a node declaring it", "resize", featurePod("full", "2", "1", "1", 1), featurePod("full", "3", "1", "1", 2), "ok"},
		{"init container resize on a node declaring it", "", featurePod("full", "", "1", "1", 1), featurePod("full", "", "2", "1", 2), "ok"},
		{"pod-level resize on a bare node", "resize", featurePod("bare", "2", "1", "1", 1), featurePod("bare", "3", "1", "1", 2),
			`403 pods "test-pod" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling which are not available on node "bare"`},
		{"pod-level resources added", "resize", featurePod("other", "", "1", "1", 1), featurePod("other", "3", "1", "1", 2),
			`403 pods "test-pod" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling which are not available on node "other"`},
		{"init container resize on a bare node", "", featurePod("bare", "", "1", "1", 1), featurePod("bare", "", "2", "1", 2),
			`403 pods "test-pod" is forbidden: pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node "bare"`},
		{"both on a bare node", "resize", featurePod("bare", "2", "1", "1", 1), featurePod("bare", "3", "2", "1", 2),
			`403 pods "test-pod" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling, InPlacePodVerticalScalingInitContainers which are not available on node "bare"`},
		{"unknown node", "resize", featurePod("gone", "", "1", "1", 1), featurePod("gone", "", "2", "1", 2),
			`403 pods "test-pod" is forbidden: node "gone" not found`},
		{"status subresource", "status", featurePod("bare", "", "1", "1", 1), featurePod("bare", "", "2", "1", 2), "ok"},
		{"generation unchanged", "", featurePod("bare", "", "1", "1", 1), featurePod("bare", "", "2", "1", 1), "ok"},
		{"pod not bound", "resize", featurePod("", "", "1", "1", 1), featurePod("", "", "2", "1", 2), "ok"},
		{"init containers removed", "", featurePod("bare", "", "1", "1", 1), func() *corev1.Pod {
			p := featurePod("bare", "", "1", "1", 2)
			p.Spec.InitContainers = nil
			return p
		}(), "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(p.Validate(context.Background(), podUpdate(tc.subresource, tc.pod, tc.old))); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
