package controlplane_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPodResizeInitContainers: as 1.37's pods/resize (InPlacePodVerticalScalingInitContainers
// is GA), the cpu and memory of init containers, sidecar or not, are resized in place and move
// the generation; other resources, added or removed init containers, renamed ones and a
// non-sidecar restarted on resize are refused with upstream's causes.
func TestPodResizeInitContainers(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	pods := r.Resource(schema.GroupResource{Resource: "pods"})
	rs := pods.Subresources["resize"].(registry.Updater)
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	restartCPU := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	base := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Resources: cpu("100m")},
			{Name: "side", Image: "busybox", RestartPolicy: &always, Resources: cpu("100m")},
			{Name: "restarts", Image: "busybox", Resources: cpu("100m"), ResizePolicy: restartCPU}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: cpu("1")}}}}
	_, err := pods.Store.Create(ctx, "default", "", base.DeepCopy(), &metav1.CreateOptions{})
	if s := resizeCauses(t, err); s != `[FieldValueInvalid "spec.initContainers[2].resizePolicy[0].restartPolicy" "Invalid value: \"RestartContainer\": must not be set to 'RestartContainer' for non-sidecar initContainers"]` {
		t.Fatalf("create with RestartContainer on a non-sidecar init container: %s", s)
	}
	// as made before 1.37 forbade this policy on create
	base.Spec.InitContainers[2].ResizePolicy = nil
	stored := create(t, pods.Store, "default", base).(*corev1.Pod)
	stored.Spec.InitContainers[2].ResizePolicy = restartCPU
	var kind *registry.Kind
	for _, k := range controlplane.Kinds() {
		if k.Plural == "pods" && k.StorageOf == nil {
			kind = k
		}
	}
	codec, err := registry.StorageCodec("", kind)
	if err != nil {
		t.Fatal(err)
	}
	stored.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	data, err := codec.Encode(stored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.EtcdClientForTest().Put(ctx, "/registry/pods/default/p", string(data)); err != nil {
		t.Fatal(err)
	}
	resize := func(change func(p *corev1.Pod)) (*corev1.Pod, error) {
		cur, err := pods.Store.Get(ctx, "default", "p", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := cur.(*corev1.Pod).DeepCopy()
		change(p)
		out, _, err := rs.Update(ctx, "default", "p", put(p), &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*corev1.Pod), nil
	}

	got, err := resize(func(p *corev1.Pod) {
		p.Spec.InitContainers[0].Resources = cpu("200m")
		p.Spec.InitContainers[1].Resources = cpu("300m")
		p.Spec.InitContainers[0].Image = "nginx" // not taken from this subresource
	})
	if err != nil {
		t.Fatal(err)
	}
	ic := got.Spec.InitContainers
	if s := fmt.Sprintln(ic[0].Resources.Requests.Cpu(), ic[1].Resources.Requests.Cpu(), ic[0].Image, got.Generation); s != "200m 300m busybox 2\n" {
		t.Fatalf("after resize: %s", s)
	}

	for _, tc := range []struct {
		name   string
		change func(p *corev1.Pod)
		want   string
	}{
		{"other resources", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			p.Spec.InitContainers[0].Resources.Limits = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		},
			`[FieldValueForbidden "spec.initContainers[0]" "Forbidden: only cpu and memory resources for init or sidecar containers are mutable"]`},
		{"init container added", func(p *corev1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "x", Image: "busybox"})
		},
			`[FieldValueForbidden "spec.initContainers" "Forbidden: initContainers may not be added or removed on resize"]`},
		{"init container renamed", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "renamed" },
			`[FieldValueForbidden "spec.initContainers[0].name" "Forbidden: initContainers may not be renamed or reordered on resize"]`},
		{"non-sidecar restarted on resize", func(p *corev1.Pod) { p.Spec.InitContainers[2].Resources = cpu("200m") },
			`[FieldValueForbidden "spec.initContainers[2]" "Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"]`},
		{"request removed", func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources.Requests = nil },
			`[FieldValueForbidden "spec.initContainers[0].resources.requests" "Forbidden: resource requests cannot be removed"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resize(tc.change)
			if s := resizeCauses(t, err); s != tc.want {
				t.Fatalf("causes %s\nwant   %s", s, tc.want)
			}
		})
	}
	w := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: corev1.PodSpec{OS: &corev1.PodOS{Name: corev1.Windows},
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: cpu("1")}}}}
	create(t, pods.Store, "default", w.DeepCopy())
	w.Spec.Containers[0].Resources = cpu("2")
	_, _, err = rs.Update(ctx, "default", "w", put(w), &metav1.UpdateOptions{})
	if s := resizeCauses(t, err); s != `[FieldValueForbidden "[]" "Forbidden: windows pods cannot be resized"]` {
		t.Fatalf("windows pod: %s", s)
	}
}

// resizeCauses describes err, a 422, by its causes.
func resizeCauses(t *testing.T, err error) string {
	t.Helper()
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Code != 422 {
		t.Fatalf("got %v, want 422", err)
	}
	var out []string
	for _, c := range st.Status().Details.Causes {
		out = append(out, fmt.Sprintf("%s %q %q", c.Type, c.Field, c.Message))
	}
	return fmt.Sprint(out)
}
