package upstream_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestPodResizeValidationAsKubeAPIServer: ValidatePodResize's rules get the same answers
// from hacp as from kube-apiserver (upstream.KubernetesVersion) on unbound pods (no resize
// admission plugin speaks): a RestartContainer resize policy on a non-sidecar init container
// on create and on resize, Windows pods, removed requests and limits, changed resize
// policies, requests above limits, a QoS class change, and pod-level resources
// (InPlacePodLevelResourcesVerticalScaling is on in 1.37): resized, removed, other resources.
func TestPodResizeValidationAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	want := podResizeValidationSteps(t, kas.config)
	got := podResizeValidationSteps(t, servertest.RestConfig(t, hacp))
	sameSteps(t, got, want)
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// resizeValidationPods are the pods the steps resize: "b" Burstable with limits, "g"
// Guaranteed, "w" for Windows, "pl" with pod-level resources, each with an init container.
func resizeValidationPods() []*corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	mk := func(name string, ctr corev1.ResourceRequirements, podLevel *corev1.ResourceRequirements) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Resources: podLevel,
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m")}},
				{Name: "side", Image: "busybox", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m")}}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: ctr}}}}
	}
	g := mk("g", corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}, nil)
	for i := range g.Spec.InitContainers {
		g.Spec.InitContainers[i].Resources = corev1.ResourceRequirements{Limits: rl("cpu", "100m", "memory", "100Mi")}
	}
	w := mk("w", corev1.ResourceRequirements{Requests: rl("cpu", "1")}, nil)
	w.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	return []*corev1.Pod{
		mk("b", corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "2Gi")}, nil),
		g,
		w,
		mk("plim", corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "100Mi")},
			&corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "2Gi")}),
		mk("pl", corev1.ResourceRequirements{Requests: rl("cpu", "500m")},
			&corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "2Gi")}),
	}
}

type resizeStep struct {
	step, pod string
	change    func(p *corev1.Pod)
}

func resizeValidationSteps() []resizeStep {
	c0 := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	restart := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	return []resizeStep{
		{"windows pod", "w", func(p *corev1.Pod) { c0(p).Resources.Requests = rl("cpu", "2") }},
		{"memory request removed", "b", func(p *corev1.Pod) { delete(c0(p).Resources.Requests, "memory") }},
		{"limits removed", "b", func(p *corev1.Pod) { c0(p).Resources.Limits = nil }},
		{"init request removed", "b", func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources.Requests = nil }},
		{"request above limit", "b", func(p *corev1.Pod) { c0(p).Resources.Requests["cpu"] = resource.MustParse("3") }},
		{"container resize policy added", "b", func(p *corev1.Pod) { c0(p).ResizePolicy = restart }},
		{"non-sidecar init RestartContainer added", "b", func(p *corev1.Pod) { p.Spec.InitContainers[0].ResizePolicy = restart }},
		{"sidecar RestartContainer added", "b", func(p *corev1.Pod) { p.Spec.InitContainers[1].ResizePolicy = restart }},
		{"container ephemeral-storage", "b", func(p *corev1.Pod) { c0(p).Resources.Requests["ephemeral-storage"] = resource.MustParse("1Gi") }},
		{"guaranteed to burstable", "g", func(p *corev1.Pod) { c0(p).Resources.Requests["cpu"] = resource.MustParse("500m") }},
		{"guaranteed resized", "g", func(p *corev1.Pod) {
			c0(p).Resources = corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "2Gi")}
		}},
		{"within limits", "b", func(p *corev1.Pod) { c0(p).Resources.Requests["cpu"] = resource.MustParse("1500m") }},
		{"pod-level cpu", "pl", func(p *corev1.Pod) { p.Spec.Resources.Requests["cpu"] = resource.MustParse("1500m") }},
		{"pod-level memory request removed", "pl", func(p *corev1.Pod) { delete(p.Spec.Resources.Requests, "memory") }},
		{"pod-level limits removed", "pl", func(p *corev1.Pod) { p.Spec.Resources.Limits = nil }},
		{"pod-level resources dropped", "pl", func(p *corev1.Pod) { p.Spec.Resources = nil }},
		{"pod-level ephemeral-storage", "pl", func(p *corev1.Pod) { p.Spec.Resources.Limits["ephemeral-storage"] = resource.MustParse("1Gi") }},
		{"container of pod-level pod", "pl", func(p *corev1.Pod) { c0(p).Resources.Requests["cpu"] = resource.MustParse("700m") }},
		{"container above pod-level", "pl", func(p *corev1.Pod) { c0(p).Resources.Requests["cpu"] = resource.MustParse("1800m") }},
		{"pod-level below containers", "pl", func(p *corev1.Pod) { p.Spec.Resources.Requests["cpu"] = resource.MustParse("200m") }},
		{"pod-level added", "b", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "3"), Limits: rl("cpu", "4")}
		}},
		{"pod-level limits only", "plim", func(p *corev1.Pod) { p.Spec.Resources.Limits["cpu"] = resource.MustParse("3") }},
	}
}

// podResizeValidationSteps runs the steps against one server and describes what each saw.
func podResizeValidationSteps(t *testing.T, rc *rest.Config) []string {
	t.Helper()
	s := &resizeServer{t: t, cs: kubernetes.NewForConfigOrDie(rc)}
	ctx := context.Background()
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: resizeNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := s.cs.CoreV1().ServiceAccounts(resizeNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var seen []string
	for _, p := range resizeValidationPods() {
		if _, err := s.cs.CoreV1().Pods(resizeNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bad := resizeValidationPods()[0]
	bad.Name = "bad"
	bad.Spec.InitContainers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	bad.Spec.InitContainers[1].ResizePolicy = bad.Spec.InitContainers[0].ResizePolicy
	_, err = s.cs.CoreV1().Pods(resizeNS).Create(ctx, bad, metav1.CreateOptions{})
	seen = append(seen, "create with a non-sidecar init RestartContainer: "+describeStatus(err))
	seen = append(seen, templateSteps(s.cs, bad.Spec)...)
	for _, st := range resizeValidationSteps() {
		seen = append(seen, st.step+": "+describeStatus(s.resizeWith(st.pod, st.change)))
	}
	for _, name := range []string{"b", "g", "pl", "plim"} {
		p, err := s.cs.CoreV1().Pods(resizeNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, fmt.Sprintf("%s after resizes: generation %d, qos %s, container %v, pod-level %v", name, p.Generation,
			p.Status.QOSClass, p.Spec.Containers[0].Resources, p.Spec.Resources))
	}
	return seen
}

// templateSteps creates a pod template, a deployment and a cron job whose pod spec has a
// RestartContainer resize policy on a non-sidecar init container (refused, as on a pod), and
// a deployment with it only on a sidecar (created).
func templateSteps(cs kubernetes.Interface, spec corev1.PodSpec) []string {
	ctx := context.Background()
	lbl := map[string]string{"app": "t"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: spec}
	_, err := cs.CoreV1().PodTemplates(resizeNS).Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Template: tmpl}, metav1.CreateOptions{})
	seen := []string{"pod template: " + describeStatus(err)}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: lbl}, Template: tmpl}}
	_, err = cs.AppsV1().Deployments(resizeNS).Create(ctx, d, metav1.CreateOptions{})
	seen = append(seen, "deployment: "+describeStatus(err))
	jt := tmpl.DeepCopy()
	jt.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cj"}, Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: *jt}}}}
	_, err = cs.BatchV1().CronJobs(resizeNS).Create(ctx, cj, metav1.CreateOptions{})
	seen = append(seen, "cron job: "+describeStatus(err))
	d.Spec.Template.Spec.InitContainers[0].ResizePolicy = nil
	_, err = cs.AppsV1().Deployments(resizeNS).Create(ctx, d, metav1.CreateOptions{})
	seen = append(seen, "deployment with a sidecar's RestartContainer: "+describeStatus(err))
	return seen
}
