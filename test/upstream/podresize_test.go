package upstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestPodResizeAdmissionAsKubeAPIServer: the same nodes (status written by the API, as no
// kubelet runs), pods bound to them and resizes get the same answers from hacp as from
// kube-apiserver (upstream.KubernetesVersion), from PodResizeValidator (beyond allocatable,
// a Windows node, an unknown node) and NodeDeclaredFeatureValidator (a non-sidecar init
// container resized on a node that does not declare it), and the resizes, updates and
// bindings neither refuses.
func TestPodResizeAdmissionAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	want := podResizeSteps(t, kas.config)
	got := podResizeSteps(t, servertest.RestConfig(t, hacp))
	sameSteps(t, got, want)
}

// resizeServer is one server under test, with the namespace of the test's pods.
type resizeServer struct {
	t  *testing.T
	cs kubernetes.Interface
}

const resizeNS = "resize"

// node creates a node labelled with os that declares features and can allocate 4 cpus
// and 8Gi of memory.
func (s *resizeServer) node(name, os string, features ...string) {
	s.t.Helper()
	ctx := context.Background()
	n, err := s.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelOSStable: os}}}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Allocatable = n.Status.Capacity
	n.Status.DeclaredFeatures = features
	if _, err := s.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// pod creates a pod bound to node ("" for none) with an init container asking for 100m
// cpu and a container asking for 1 cpu and 1Gi.
func (s *resizeServer) pod(name, node string) {
	s.t.Helper()
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: cpu}}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	if _, err := s.cs.CoreV1().Pods(resizeNS).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// resize asks pods/resize for the container's cpu and memory requests and the init
// container's cpu request ("" keeps one).
func (s *resizeServer) resize(name, cpu, mem, initCPU string) error {
	return s.resizeWith(name, func(p *corev1.Pod) {
		for _, r := range []struct {
			l    corev1.ResourceList
			name corev1.ResourceName
			q    string
		}{{p.Spec.Containers[0].Resources.Requests, corev1.ResourceCPU, cpu}, {p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory, mem},
			{p.Spec.InitContainers[0].Resources.Requests, corev1.ResourceCPU, initCPU}} {
			if r.q != "" {
				r.l[r.name] = resource.MustParse(r.q)
			}
		}
	})
}

// resizeWith sends the pod, changed by change, to pods/resize.
func (s *resizeServer) resizeWith(name string, change func(p *corev1.Pod)) error {
	ctx := context.Background()
	p, err := s.cs.CoreV1().Pods(resizeNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	change(p)
	_, err = s.cs.CoreV1().Pods(resizeNS).UpdateResize(ctx, name, p, metav1.UpdateOptions{})
	return err
}

// podResizeSteps runs the steps against one server and describes what each saw.
func podResizeSteps(t *testing.T, rc *rest.Config) []string {
	t.Helper()
	s := &resizeServer{t: t, cs: kubernetes.NewForConfigOrDie(rc)}
	ctx := context.Background()
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: resizeNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager runs beside kube-apiserver to make the default account.
	_, err := s.cs.CoreV1().ServiceAccounts(resizeNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s.node("windows-node", "windows")
	s.node("bare-node", "linux")
	s.node("linux-node", "linux", "InPlacePodVerticalScalingInitContainers")
	for _, p := range [][2]string{{"p", "linux-node"}, {"w", "windows-node"}, {"b", "bare-node"}, {"ghost", "missing-node"}, {"unbound", ""}} {
		s.pod(p[0], p[1])
	}
	// Both servers' plugins read nodes from an informer: once a resize that fits goes
	// through, it has seen linux-node's status, written last.
	for deadline := time.Now().Add(time.Minute); ; {
		err := s.resize("p", "2", "", "")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a resize within linux-node's allocatable: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll
	}
	var seen []string
	for _, st := range []struct{ step, pod, cpu, mem, initCPU string }{
		{"cpu beyond allocatable", "p", "10", "", ""},
		{"memory beyond allocatable", "p", "", "10Gi", ""},
		{"both beyond allocatable", "p", "5", "9Gi", ""},
		{"Windows node", "w", "2", "", ""},
		{"unknown node", "ghost", "2", "", ""},
		{"unbound pod", "unbound", "10", "", ""},
		{"within allocatable", "p", "3", "2Gi", ""},
		{"init container on a node without the feature", "b", "", "", "200m"},
		{"init container on a node declaring the feature", "p", "", "", "200m"},
		{"container on a node without the feature", "b", "2", "", ""},
	} {
		seen = append(seen, st.step+": "+describeStatus(s.resize(st.pod, st.cpu, st.mem, st.initCPU)))
	}
	// The init containers' resize rules (1.37: InPlacePodVerticalScalingInitContainers is GA).
	for _, st := range []struct {
		step   string
		change func(p *corev1.Pod)
	}{
		{"init container ephemeral-storage", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}},
		{"init container renamed", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "renamed" }},
		{"init container added", func(p *corev1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "more", Image: "busybox"})
		}},
		{"init container image", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "nginx" }},
	} {
		seen = append(seen, st.step+": "+describeStatus(s.resizeWith("p", st.change)))
	}
	p, err := s.cs.CoreV1().Pods(resizeNS).Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, fmt.Sprintf("after resizes: generation %d, init %s %s, container %s %s", p.Generation, p.Spec.InitContainers[0].Image,
		p.Spec.InitContainers[0].Resources.Requests.Cpu(), p.Spec.Containers[0].Resources.Requests.Cpu(), p.Spec.Containers[0].Resources.Requests.Memory()))
	p, err = s.cs.CoreV1().Pods(resizeNS).Get(ctx, "ghost", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"touched": "yes"}
	_, err = s.cs.CoreV1().Pods(resizeNS).Update(ctx, p, metav1.UpdateOptions{})
	seen = append(seen, "update without a spec change: "+describeStatus(err))
	err = s.cs.CoreV1().Pods(resizeNS).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unbound"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "bare-node"}}, metav1.CreateOptions{})
	seen = append(seen, "binding to a node without features: "+describeStatus(err))
	return seen
}
