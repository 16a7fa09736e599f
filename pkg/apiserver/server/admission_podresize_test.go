package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// resizeEnv is a namespace of a server with nodes and pods bound to them.
type resizeEnv struct {
	t  *testing.T
	cs kubernetes.Interface
	ns string
}

// node creates a node labelled with os (none when "") that declares features and can
// allocate 4 cpus and 8Gi of memory.
func (e *resizeEnv) node(name, os string, features ...string) {
	e.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if os != "" {
		n.Labels = map[string]string{corev1.LabelOSStable: os}
	}
	n, err := e.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	n.Status.Capacity = n.Status.Allocatable
	n.Status.DeclaredFeatures = features
	if _, err := e.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// pod creates a pod bound to node ("" for none) with an init container asking for 100m
// cpu and a container asking for 1 cpu and 1Gi.
func (e *resizeEnv) pod(name, node string) {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// resize asks pods/resize for the container's new cpu and memory requests and the init
// container's cpu request ("" keeps one).
func (e *resizeEnv) resize(name, cpu, mem, initCPU string) error {
	ctx := context.Background()
	p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	set := func(l corev1.ResourceList, r corev1.ResourceName, q string) {
		if q != "" {
			l[r] = resource.MustParse(q)
		}
	}
	set(p.Spec.Containers[0].Resources.Requests, corev1.ResourceCPU, cpu)
	set(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory, mem)
	set(p.Spec.InitContainers[0].Resources.Requests, corev1.ResourceCPU, initCPU)
	_, err = e.cs.CoreV1().Pods(e.ns).UpdateResize(ctx, name, p, metav1.UpdateOptions{})
	return err
}

// resizeAnswer is an answer as code, reason, message and causes; "ok" for none.
func resizeAnswer(err error) string {
	if err == nil {
		return "ok"
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return err.Error()
	}
	s := st.Status()
	out := fmt.Sprintf("%d %s %q", s.Code, s.Reason, s.Message)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out += fmt.Sprintf(" [%s %q %q]", c.Type, c.Field, c.Message)
		}
	}
	return out
}

// TestAdmissionPodResizeAndNodeFeatures: through client-go, PodResizeValidator refuses a
// resize beyond the node's allocatable, on a Windows node and on an unknown node, with
// upstream's status, message and cause, and lets one that fits through;
// NodeDeclaredFeatureValidator refuses resizing a non-sidecar init container on a node that
// does not declare InPlacePodVerticalScalingInitContainers and allows it on one that does.
// Updates that change no spec, unbound pods and bindings are not theirs to refuse.
func TestAdmissionPodResizeAndNodeFeatures(t *testing.T) {
	s := servertest.New(t, nil)
	e := &resizeEnv{t: t, cs: kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s)), ns: "resize"}
	ctx := context.Background()
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "default service account", func() error {
		_, err := e.cs.CoreV1().ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	e.node("windows-node", "windows")
	e.node("bare-node", "linux")
	e.node("linux-node", "linux", "InPlacePodVerticalScalingInitContainers")
	for name, node := range map[string]string{"p": "linux-node", "w": "windows-node", "b": "bare-node", "ghost": "missing-node", "unbound": ""} {
		e.pod(name, node)
	}
	// The plugins read nodes from an informer: once a resize that fits goes through, it has
	// seen linux-node's status, written last.
	eventuallyOK(t, "a resize within linux-node's allocatable", func() error { return e.resize("p", "2", "", "") })

	for _, tc := range []struct {
		name, pod, cpu, mem, initCPU, want string
	}{
		{"cpu beyond allocatable", "p", "10", "", "",
			`403 Forbidden "pods \"p\" is forbidden: node didn't have enough allocatable resources: cpu, requested: 10000, allocatable: 4000" [NodeCapacity "" ""]`},
		{"memory beyond allocatable", "p", "", "10Gi", "",
			`403 Forbidden "pods \"p\" is forbidden: node didn't have enough allocatable resources: memory, requested: 10737418240, allocatable: 8589934592" [NodeCapacity "" ""]`},
		{"both beyond allocatable", "p", "5", "9Gi", "",
			`403 Forbidden "pods \"p\" is forbidden: node didn't have enough allocatable resources: cpu, requested: 5000, allocatable: 4000; memory, requested: 9663676416, allocatable: 8589934592" [NodeCapacity "" ""]`},
		{"Windows node", "w", "2", "", "",
			`403 Forbidden "pods \"w\" is forbidden: pod resize is only supported on linux nodes, node \"windows-node\" is \"windows\"" [UnsupportedPlatform "" ""]`},
		{"unknown node", "ghost", "2", "", "", `403 Forbidden "pods \"ghost\" is forbidden: node \"missing-node\" not found"`},
		{"unbound pod", "unbound", "10", "", "", "ok"},
		{"within allocatable", "p", "3", "2Gi", "", "ok"},
		{"init container on a node without the feature", "b", "", "", "200m",
			`403 Forbidden "pods \"b\" is forbidden: pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node \"bare-node\""`},
		{"init container on a node declaring the feature", "p", "", "", "200m", "ok"},
		{"container on a node without the feature", "b", "2", "", "", "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resizeAnswer(e.resize(tc.pod, tc.cpu, tc.mem, tc.initCPU)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}

	t.Run("update without a spec change", func(t *testing.T) {
		p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, "ghost", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels = map[string]string{"touched": "yes"}
		if _, err := e.cs.CoreV1().Pods(e.ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("binding to a node without features", func(t *testing.T) {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unbound"}, Target: corev1.ObjectReference{Kind: "Node", Name: "bare-node"}}
		if err := e.cs.CoreV1().Pods(e.ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
