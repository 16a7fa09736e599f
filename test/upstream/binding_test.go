package upstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestPodBindingAsKubeAPIServer: pods/binding answers as kube-apiserver's
// (upstream.KubernetesVersion): the Binding's UID and resourceVersion are preconditions, a
// pod with scheduling gates, one already on a node and one being deleted are refused with
// the same 409s (details naming pods/binding), a dry run changes nothing, a binding sets the
// node, the PodScheduled condition and clears the nominated node name, and admission sees a
// Binding posted to the legacy bindings resource as one to pods/binding.
func TestPodBindingAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	kas := startKubeAPIServer(t, bin, etcdtest.Start(t).ClientURL())
	hacp := servertest.New(t, nil)
	want := bindingSteps(t, kubernetes.NewForConfigOrDie(kas.config))
	got := bindingSteps(t, kubernetes.NewForConfigOrDie(servertest.RestConfig(t, hacp)))
	for _, s := range want {
		t.Logf("kube-apiserver: %s", s)
	}
	sameSteps(t, got, want)
}

// describeBindingError is describeStatus with the Status details' kind, which names the
// subresource on a refused binding.
func describeBindingError(err error) string {
	out := describeStatus(err)
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
		d := st.Status().Details
		out += fmt.Sprintf(" details{group=%q kind=%q name=%q}", d.Group, d.Kind, d.Name)
	}
	return out
}

func bindingSteps(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	const ns = "binding"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver has no controller-manager to make it; hacp makes it itself.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods(ns)
	create := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
		out, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	bind := func(name string, uid types.UID, rv string, dry bool) error {
		opts := metav1.CreateOptions{}
		if dry {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, ResourceVersion: rv},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, opts)
	}
	var seen []string
	see := func(step string, err error) { seen = append(seen, step+": "+describeBindingError(err)) }

	create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/wait"}}}})
	see("gated pod", bind("gated", "", "", false))

	p := create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	p.Status.NominatedNodeName = "n0"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/0 nodes"}}
	p, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The pod's UID and resourceVersion differ between the servers.
	mine := strings.NewReplacer(string(p.UID), "<uid>", "object meta: "+p.ResourceVersion, "object meta: <rv>")
	see("wrong uid", bind("p", "00000000-0000-0000-0000-000000000000", "", false))
	see("stale resourceVersion", bind("p", "", "1", false))
	seen[len(seen)-2], seen[len(seen)-1] = mine.Replace(seen[len(seen)-2]), mine.Replace(seen[len(seen)-1])
	see("missing pod", bind("nope", "", "", false))
	see("dry run", bind("p", p.UID, p.ResourceVersion, true))
	seen = append(seen, "after the dry run: "+describeBound(t, cs, ns, "p"))
	see("bind", bind("p", p.UID, p.ResourceVersion, false))
	seen = append(seen, "bound: "+describeBound(t, cs, ns, "p"))
	see("bind again", bind("p", "", "", false))

	create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "leaving", Finalizers: []string{"example.com/hold"}}})
	if err := pods.Delete(ctx, "leaving", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	see("pod being deleted", bind("leaving", "", "", false))
	return append(seen, legacyBindingAdmission(t, cs, ns)...)
}

// legacyBindingAdmission: a ValidatingAdmissionPolicy on bindings and pods/binding sees a
// Binding posted to pods/binding and one posted to the legacy bindings resource.
func legacyBindingAdmission(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	ctx := context.Background()
	vaps := cs.AdmissionregistrationV1()
	if _, err := vaps.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-node"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"bindings", "pods/binding"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.target.name != 'forbidden'", Message: "not that node"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vaps.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-node"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-forbidden-node",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods(ns)
	for _, name := range []string{"sub", "legacy"} {
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	forbidden := func(name string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "forbidden"}}
	}
	until(t, "the policy refuses a dry-run pods/binding", func() error {
		if err := pods.Bind(ctx, forbidden("sub"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsInvalid(err) {
			return fmt.Errorf("dry-run binding: %v", err)
		}
		return nil
	})
	subErr := pods.Bind(ctx, forbidden("sub"), metav1.CreateOptions{})
	legacyErr := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("bindings").Body(forbidden("legacy")).Do(ctx).Error()
	return []string{"policy on pods/binding: " + describeBindingError(subErr), "policy on bindings: " + describeBindingError(legacyErr)}
}

// describeBound is what a binding changes on pod ns/name: its node, nominated node and
// PodScheduled condition (whether its times are set, not their values).
func describeBound(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("node=%q nominated=%q generation=%d", p.Spec.NodeName, p.Status.NominatedNodeName, p.Generation)
	for _, c := range p.Status.Conditions {
		out += fmt.Sprintf(" condition{%s=%s reason=%q message=%q probeTime=%t transitionTime=%t}", c.Type, c.Status, c.Reason, c.Message,
			!c.LastProbeTime.IsZero(), !c.LastTransitionTime.IsZero())
	}
	return out
}
