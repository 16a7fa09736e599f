package upstream_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestAdmission137PluginsAsKubeAPIServer: the default admission plugins new in 1.37 answer
// as kube-apiserver's (upstream.KubernetesVersion, with RBAC): ClusterTrustBundleAttest's
// refusal of a bundle of a signer the writer may not attest for (code, reason, message) and
// its acceptance after an RBAC grant, and the labels PodTopologyLabels leaves on a pod bound
// through pods/binding to a node with topology labels.
func TestAdmission137PluginsAsKubeAPIServer(t *testing.T) {
	kubeBin := upstream.Binary(t, "kube-apiserver")
	h := servertest.New(t, nil)
	kube := startAuthzKube(t, kubeBin, etcdtest.Start(t).ClientURL(), h.Certs().CACert, h.Certs().ServiceAccountKey)
	ca := string(h.Certs().CAPEM)
	want := admission137Steps(t, kube.admin, ca)
	got := admission137Steps(t, servertest.RestConfig(t, h), ca)
	for _, s := range want {
		t.Logf("kube-apiserver: %s", s)
	}
	sameSteps(t, got, want)
}

// admission137Steps runs the steps against one server as its admin (and as carol,
// impersonated) and describes what each saw.
func admission137Steps(t *testing.T, admin *rest.Config, ca string) []string {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(admin)
	asCarol := rest.CopyConfig(admin)
	asCarol.Impersonate = rest.ImpersonationConfig{UserName: "carol"}
	carol := kubernetes.NewForConfigOrDie(asCarol).CertificatesV1().ClusterTrustBundles()
	var seen []string
	see := func(step string, err error) { seen = append(seen, step+": "+describeStatus(err)) }
	bundle := func(name, signer string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: ca}}
	}
	grant(t, cs, "carol-ctb", rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"clustertrustbundles"}, Verbs: []string{"create", "get", "update"}})
	until(t, "carol's grant is seen", func() error {
		_, err := carol.Create(ctx, bundle("plain", ""), metav1.CreateOptions{})
		return err
	})
	_, err := carol.Create(ctx, bundle("example.com:signer:one", "example.com/signer"), metav1.CreateOptions{})
	see("bundle of a signer without attest", err)
	grant(t, cs, "carol-attest", rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
		ResourceNames: []string{"example.com/*"}, Verbs: []string{"attest"}})
	until(t, "carol's attest grant is seen", func() error {
		_, err := carol.Create(ctx, bundle("example.com:signer:one", "example.com/signer"), metav1.CreateOptions{})
		return err
	})
	_, err = carol.Create(ctx, bundle("example.org:signer:one", "example.org/signer"), metav1.CreateOptions{})
	see("bundle of another domain's signer", err)

	seen = append(seen, "bound pod's labels: "+boundPodLabels(t, cs))
	seen = append(seen, otherBindings(t, cs)...)
	return seen
}

// otherBindings, once the node is known: the labels of a pod created on the node, of one
// bound with a Binding of its own labels, and of one bound through the legacy bindings
// resource (which PodTopologyLabels, looking at pods/binding, does not see).
func otherBindings(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	const ns = "topology"
	pods := cs.CoreV1().Pods(ns)
	pod := func(name, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web", "tier": "old"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	labelsOf := func(name string, err error) string {
		if err != nil {
			return describeStatus(err)
		}
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sortedLabels(p.Labels)
	}
	binding := func(name string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "new"}},
			Target: corev1.ObjectReference{Kind: "Node", Name: "zoned"}}
	}
	pod("direct", "zoned")
	pod("own-labels", "")
	pod("legacy", "")
	return []string{
		"pod created on the node: " + labelsOf("direct", nil),
		"binding with labels: " + labelsOf("own-labels", pods.Bind(ctx, binding("own-labels"), metav1.CreateOptions{})),
		"legacy bindings resource: " + labelsOf("legacy", cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("bindings").
			Body(binding("legacy")).Do(ctx).Error()),
	}
}

// sortedLabels is labels as a sorted list of key=value.
func sortedLabels(labels map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k+"="+labels[k])
	}
	return fmt.Sprint(out)
}

// boundPodLabels binds a labelled pod to a node with topology labels through pods/binding
// and returns the pod's labels afterwards. Both servers' plugins read nodes from an
// informer, so a pod bound before the node was seen is tried again with a new one.
func boundPodLabels(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	const ns = "topology"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver has no controller-manager to make it; hacp makes it itself.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zoned", Labels: map[string]string{
		"topology.kubernetes.io/zone": "eu-west-1a", "topology.kubernetes.io/region": "eu-west-1",
		"topology.kubernetes.io/rack": "r7", "kubernetes.io/hostname": "zoned"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var labels map[string]string
	try := 0
	until(t, "a bound pod carries the node's zone", func() error {
		try++
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bound-%d", try), Labels: map[string]string{"app": "web", "topology.kubernetes.io/zone": "stale"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "zoned"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if labels = got.Labels; labels["topology.kubernetes.io/zone"] == "stale" {
			return fmt.Errorf("labels %v", labels)
		}
		return nil
	})
	return sortedLabels(labels)
}

// grant gives carol a ClusterRole of rule.
func grant(t *testing.T, cs kubernetes.Interface, name string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// until polls cond (waitUntil) until it returns no error.
func until(t *testing.T, what string, cond func() error) {
	t.Helper()
	waitUntil(t, what, func() (bool, string) {
		if err := cond(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
