package upstream

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KwokAnnotation marks the nodes kwok plays the kubelet of: kwok started with
// --manage-nodes-with-annotation-selector=KwokAnnotation=fake leaves every other node alone.
const KwokAnnotation = "kwok.x-k8s.io/node"

// KwokNode returns a node for kwok to manage, with room for plenty of pods.
func KwokNode(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/role": "agent", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res},
	}
}
