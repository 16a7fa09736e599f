package plugins

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// topologyAttributes are a create of obj on pods (sub "" or "binding").
func topologyAttributes(sub string, obj runtime.Object) *admission.Attributes {
	kind := "Pod"
	if sub == "binding" {
		kind = "Binding"
	}
	return &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind(kind),
		Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: sub, Namespace: "test-ns", Name: "testPod", Object: obj}
}

// TestPodTopologyLabels follows upstream's podtopologylabels TestPodTopology: of the node's
// labels only topology.kubernetes.io/zone and region are copied, onto a Binding to the node
// and onto a new pod naming it, overwriting the same keys.
func TestPodTopologyLabels(t *testing.T) {
	for _, tc := range []struct {
		name           string
		target         *corev1.ObjectReference // default: the node, Kind Node
		nodeLabels     map[string]string
		existing, want map[string]string
	}{
		{name: "copies zone and region", nodeLabels: map[string]string{"topology.kubernetes.io/zone": "zone1", "topology.kubernetes.io/region": "region1",
			"topology.kubernetes.io/arbitrary": "something", "non-topology.kubernetes.io/label": "something"},
			want: map[string]string{"topology.kubernetes.io/zone": "zone1", "topology.kubernetes.io/region": "region1"}},
		{name: "no arbitrary topology labels", nodeLabels: map[string]string{"topology.kubernetes.io/zone": "zone1", "topology.kubernetes.io/arbitrary": "something"},
			want: map[string]string{"topology.kubernetes.io/zone": "zone1"}},
		{name: "no subdomain", nodeLabels: map[string]string{"topology.kubernetes.io/region": "region1", "sub.topology.kubernetes.io/zone": "value"},
			want: map[string]string{"topology.kubernetes.io/region": "region1"}},
		{name: "no key without a slash", nodeLabels: map[string]string{"topology.kubernetes.io": "value"}, existing: map[string]string{}, want: map[string]string{}},
		{name: "overwrites", nodeLabels: map[string]string{"topology.kubernetes.io/zone": "newValue"},
			existing: map[string]string{"topology.kubernetes.io/zone": "oldValue", "app": "web"},
			want:     map[string]string{"topology.kubernetes.io/zone": "newValue", "app": "web"}},
		{name: "unknown node", target: &corev1.ObjectReference{Kind: "Node", Name: "missing"},
			nodeLabels: map[string]string{"topology.kubernetes.io/zone": "zone1"}, existing: map[string]string{"app": "web"}, want: map[string]string{"app": "web"}},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "valid-test-node", Labels: tc.nodeLabels}}
		target := corev1.ObjectReference{Kind: "Node", Name: node.Name}
		if tc.target != nil {
			target = *tc.target
		}
		p := newPodTopologyLabels(func(name string) (*corev1.Node, bool) {
			if name == node.Name {
				return node, true
			}
			return nil, false
		}, func(context.Context) bool { return true })
		check := func(t *testing.T, a *admission.Attributes, got func() map[string]string) {
			t.Helper()
			if err := p.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got(), tc.want) {
				t.Fatalf("labels %v, want %v", got(), tc.want)
			}
			if err := p.Admit(context.Background(), a); err != nil || !apiequality.Semantic.DeepEqual(got(), tc.want) {
				t.Fatalf("admitted twice: labels %v, %v", got(), err) // upstream's reinvocation test
			}
		}
		t.Run(tc.name+"/binding", func(t *testing.T) {
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "testPod", Namespace: "test-ns", Labels: copyLabels(tc.existing)}, Target: target}
			check(t, topologyAttributes("binding", b), func() map[string]string { return b.Labels })
		})
		t.Run(tc.name+"/pod create", func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "testPod", Namespace: "test-ns", Labels: copyLabels(tc.existing)},
				Spec: corev1.PodSpec{NodeName: target.Name}}
			check(t, topologyAttributes("", pod), func() map[string]string { return pod.Labels })
		})
	}
}

func copyLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPodTopologyLabelsSkips: what the plugin leaves alone, and its refusal before the
// node informer has synced.
func TestPodTopologyLabelsSkips(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"topology.kubernetes.io/zone": "z"}}}
	synced := true
	p := newPodTopologyLabels(func(string) (*corev1.Node, bool) { return node, true }, func(context.Context) bool { return synced })
	if p.Handles(admission.Update) || !p.Handles(admission.Create) {
		t.Fatal("the plugin handles creates only, as upstream's")
	}
	for _, tc := range []struct {
		name string
		a    *admission.Attributes
	}{
		{"binding to a non-Node", topologyAttributes("binding", &corev1.Binding{Target: corev1.ObjectReference{Kind: "Other", Name: "n1"}})},
		{"unscheduled pod", topologyAttributes("", &corev1.Pod{})},
		{"other subresource", topologyAttributes("eviction", &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}})},
		{"other resource", &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("podtemplates"),
			Object: &corev1.PodTemplate{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeName: "n1"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.a.Object.DeepCopyObject()
			if err := p.Admit(context.Background(), tc.a); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(before, tc.a.Object) {
				t.Fatalf("changed to %+v", tc.a.Object)
			}
		})
	}
	synced = false
	err := p.Admit(context.Background(), topologyAttributes("binding", &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "testPod"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}))
	if want := `pods "testPod" is forbidden: not yet ready to handle request`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}
