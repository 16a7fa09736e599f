package upstream_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestNamespaceFinalizersAsKubeAPIServer: the rules of a namespace's spec.finalizers are
// kube-apiserver 1.37's: create adds "kubernetes" to those asked for, a plain update leaves
// them alone, namespaces/finalize replaces them (and validates them as create does), and
// the finalize that empties them deletes a namespace being deleted. kube-apiserver runs
// without a controller-manager here, so its "kubernetes" finalizer stays until finalize
// removes it; hacp's own cleanup may remove it first, which the steps allow for.
func TestNamespaceFinalizersAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	want := namespaceFinalizerSteps(t, kubernetes.NewForConfigOrDie(kas.config))
	got := namespaceFinalizerSteps(t, kubernetes.NewForConfigOrDie(servertest.RestConfig(t, hacp)))
	sameSteps(t, got, want)
}

// sameSteps: hacp saw at each step what kube-apiserver saw.
func sameSteps(t *testing.T, got, want []string) {
	t.Helper()
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("step %d:\n hacp:           %s\n kube-apiserver: %s", i, at(got, i), want[i])
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(missing)"
}

// namespaceFinalizerSteps runs the steps against one server and describes what each saw.
func namespaceFinalizerSteps(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	nss := cs.CoreV1().Namespaces()
	var seen []string
	deleting := false // from then on hacp's cleanup may have removed "kubernetes"
	see := func(step string, ns *corev1.Namespace, err error) {
		if err != nil || ns == nil {
			seen = append(seen, fmt.Sprintf("%s: %s", step, describeErr(err)))
			return
		}
		fin := slices.DeleteFunc(slices.Clone(ns.Spec.Finalizers), func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		kube := fmt.Sprint(slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes))
		if deleting {
			kube = "?"
		}
		seen = append(seen, fmt.Sprintf("%s: spec.finalizers %v (+kubernetes %s) metadata.finalizers %v label %q deleting %v",
			step, fin, kube, ns.Finalizers, ns.Labels["step"], ns.DeletionTimestamp != nil))
	}
	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fin", Labels: map[string]string{"step": "create"}},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/hold"}}}, metav1.CreateOptions{})
	see("create", ns, err)
	_, err = nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"no-domain"}}}, metav1.CreateOptions{})
	see("create with a bad finalizer", nil, err)

	ns.Spec.Finalizers, ns.Labels["step"] = nil, "update"
	ns, err = nss.Update(ctx, ns, metav1.UpdateOptions{})
	see("update", ns, err)

	ns.Spec.Finalizers, ns.Labels["step"] = []corev1.FinalizerName{"example.com/hold", corev1.FinalizerKubernetes, "example.com/other"}, "finalize"
	ns, err = nss.Finalize(ctx, ns, metav1.UpdateOptions{})
	see("finalize adding one", ns, err)

	bad := ns.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"no-domain"}
	_, err = nss.Finalize(ctx, bad, metav1.UpdateOptions{})
	see("finalize with a bad finalizer", nil, err)

	if err := nss.Delete(ctx, "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting = true
	ns, err = nss.Get(ctx, "fin", metav1.GetOptions{})
	see("deleted", ns, err)
	ns.ResourceVersion = "" // (hacp's cleanup may be writing it)
	ns.Spec.Finalizers = []corev1.FinalizerName{"example.com/other"}
	ns, err = nss.Finalize(ctx, ns, metav1.UpdateOptions{})
	see("finalize keeping one", ns, err)
	ns.ResourceVersion, ns.Spec.Finalizers = "", nil
	_, err = nss.Finalize(ctx, ns, metav1.UpdateOptions{})
	see("finalize emptying them", nil, err)
	_, err = nss.Get(ctx, "fin", metav1.GetOptions{})
	see("get after", nil, err)
	return seen
}

func describeErr(err error) string {
	if err == nil {
		return "ok"
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return err.Error()
	}
	s := st.Status()
	out := fmt.Sprintf("%d %s", s.Code, s.Reason)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out += fmt.Sprintf(" [%s %s]", c.Field, c.Type)
		}
	}
	return out
}
