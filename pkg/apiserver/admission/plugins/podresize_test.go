package plugins

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// fixedNodes is an informer source holding a fixed set of nodes (upstream's tests use a
// fake clientset the same way).
type fixedNodes []corev1.Node

func (n fixedNodes) List(context.Context, string, *metav1.ListOptions) (runtime.Object, error) {
	return &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: n}, nil
}

func (fixedNodes) Watch(context.Context, string, *metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// nodeFactory is a started, synced informer factory serving nodes.
func nodeFactory(t *testing.T, nodes ...corev1.Node) *informer.Factory {
	t.Helper()
	f := informer.NewFactory(func(gr schema.GroupResource) informer.Source {
		if gr != (schema.GroupResource{Resource: "nodes"}) {
			return nil
		}
		return fixedNodes(nodes)
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Wait() })
	nodeInformer(f)
	f.Start(ctx)
	if err := f.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func testNode(name, os string, cpu, mem string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}
	if os != "" {
		n.Labels = map[string]string{corev1.LabelOSStable: os}
	}
	return n
}

// resizePod is a pod bound to node with one container requesting cpu and mem.
func resizePod(node, cpu, mem string, generation int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod", Namespace: "default", Generation: generation},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func podUpdate(subresource string, pod, old *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{Operation: admission.Update, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: subresource,
		Namespace: pod.Namespace, Name: pod.Name, Object: pod, OldObject: old, Options: &metav1.UpdateOptions{}}
}

// describe is an admission error as code, message and cause types; "ok" for none.
func describe(err error) string {
	if err == nil {
		return "ok"
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return err.Error()
	}
	s := st.Status()
	out := fmt.Sprintf("%d %s", s.Code, s.Message)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out += fmt.Sprintf(" [%s %q %q]", c.Type, c.Field, c.Message)
		}
	}
	return out
}

// TestPodResizeValidator is upstream's TestResizeAdmission: resizes on a Linux node within
// its allocatable pass; larger ones, one on a Windows node and one on an unknown node are
// refused with upstream's messages and causes; other updates, unchanged generations and
// unbound pods are not looked at.
func TestPodResizeValidator(t *testing.T) {
	p := NewPodResizeValidator(nodeFactory(t, testNode("linux-node", "linux", "4", "8Gi"), testNode("windows-node", "windows", "4", "8Gi"),
		testNode("unlabelled-node", "", "4", "8Gi")))
	old := resizePod("linux-node", "1", "1Gi", 1)
	for _, tc := range []struct {
		name        string
		subresource string
		old, pod    *corev1.Pod
		want        string
	}{
		{"cpu resize on Linux node", "resize", old, resizePod("linux-node", "2", "1Gi", 2), "ok"},
		{"memory resize on Linux node", "resize", old, resizePod("linux-node", "1", "2Gi", 2), "ok"},
		{"resize to exactly allocatable", "resize", old, resizePod("linux-node", "4", "8Gi", 2), "ok"},
		{"node without os label counts as Linux", "resize", resizePod("unlabelled-node", "1", "1Gi", 1), resizePod("unlabelled-node", "2", "1Gi", 2), "ok"},
		{"not the resize subresource", "", old, resizePod("linux-node", "10", "1Gi", 2), "ok"},
		{"status subresource", "status", old, resizePod("linux-node", "10", "1Gi", 2), "ok"},
		{"generation unchanged", "resize", old, resizePod("linux-node", "10", "1Gi", 1), "ok"},
		{"pod not bound", "resize", resizePod("", "1", "1Gi", 1), resizePod("", "10", "1Gi", 2), "ok"},
		{"cpu over allocatable", "resize", old, resizePod("linux-node", "10", "1Gi", 2),
			`403 pods "test-pod" is forbidden: node didn't have enough allocatable resources: cpu, requested: 10000, allocatable: 4000 [NodeCapacity "" ""]`},
		{"memory over allocatable", "resize", old, resizePod("linux-node", "1", "10Gi", 2),
			`403 pods "test-pod" is forbidden: node didn't have enough allocatable resources: memory, requested: 10737418240, allocatable: 8589934592 [NodeCapacity "" ""]`},
		{"cpu and memory over allocatable", "resize", old, resizePod("linux-node", "10", "10Gi", 2),
			`403 pods "test-pod" is forbidden: node didn't have enough allocatable resources: cpu, requested: 10000, allocatable: 4000; memory, requested: 10737418240, allocatable: 8589934592 [NodeCapacity "" ""]`},
		{"Windows node", "resize", resizePod("windows-node", "1", "1Gi", 1), resizePod("windows-node", "2", "1Gi", 2),
			`403 pods "test-pod" is forbidden: pod resize is only supported on linux nodes, node "windows-node" is "windows" [UnsupportedPlatform "" ""]`},
		{"unknown node", "resize", resizePod("missing-node", "1", "1Gi", 1), resizePod("missing-node", "1", "1Gi", 2),
			`403 pods "test-pod" is forbidden: node "missing-node" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(p.Validate(context.Background(), podUpdate(tc.subresource, tc.pod, tc.old))); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestRequestsWithinAllocatable is upstream's TestValidateRequestsWithinAllocatable:
// overhead counts, pod-level requests replace the containers' sum.
func TestRequestsWithinAllocatable(t *testing.T) {
	list := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	pod := func(requests corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: requests}}}}}
	}
	withOverhead := pod(list("150m", "150Mi"))
	withOverhead.Spec.Overhead = list("100m", "100Mi")
	podLevel := pod(list("1000m", ""))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: list("100m", "")}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		allocatable corev1.ResourceList
		want        string
	}{
		{"within allocatable", pod(list("100m", "100Mi")), list("200m", "200Mi"), ""},
		{"cpu exceeds", pod(list("500m", "")), list("200m", ""), "node didn't have enough allocatable resources: cpu, requested: 500, allocatable: 200"},
		{"memory exceeds", pod(list("", "500Mi")), list("", "256Mi"), "node didn't have enough allocatable resources: memory, requested: 524288000, allocatable: 268435456"},
		{"overhead makes both exceed", withOverhead, list("200m", "200Mi"),
			"node didn't have enough allocatable resources: cpu, requested: 250, allocatable: 200; memory, requested: 262144000, allocatable: 209715200"},
		{"pod-level requests fit", podLevel, list("200m", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := requestsWithinAllocatable(tc.pod, tc.allocatable); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
