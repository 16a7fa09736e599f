package server_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestAdmissionClusterTrustBundleAttest: a ClusterTrustBundle naming a signer needs the
// attest verb on that signer (or its domain's wildcard) to be written, with upstream's
// message otherwise; one without a signer, and an update of finalizers only, need none.
func TestAdmissionClusterTrustBundleAttest(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	bundle := func(name, signer string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: string(s.Certs().CAPEM)}}
	}
	grant := func(name, user string, rules ...rbacv1.PolicyRule) {
		mustCreate(t, cs.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})
		mustCreate(t, cs.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})
	}
	writer := rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"clustertrustbundles"}, Verbs: []string{"create", "update", "get"}}
	grant("carol-ctb", "carol", writer)
	_, carolRC := userConfig(t, s, "carol")
	carol := kubernetes.NewForConfigOrDie(carolRC).CertificatesV1().ClusterTrustBundles()

	// Once carol's RBAC grant is seen, the refusal is the plugin's.
	eventuallyOK(t, "carol may create bundles without a signer", func() error {
		_, err := carol.Create(ctx, bundle("plain", ""), metav1.CreateOptions{})
		return err
	})
	_, err := carol.Create(ctx, bundle("example.com:signer:one", "example.com/signer"), metav1.CreateOptions{})
	wantForbiddenMsg(t, err, `clustertrustbundles.certificates.k8s.io "example.com:signer:one" is forbidden: user not permitted to attest for signerName "example.com/signer"`)

	// attest on the signer's name, then on another signer's domain.
	grant("carol-attest", "carol", rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
		ResourceNames: []string{"example.com/signer", "example.org/*"}, Verbs: []string{"attest"}})
	eventuallyOK(t, "carol attests for example.com/signer", func() error {
		_, err := carol.Create(ctx, bundle("example.com:signer:one", "example.com/signer"), metav1.CreateOptions{})
		return err
	})
	if _, err := carol.Create(ctx, bundle("example.org:any:one", "example.org/any"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("attest on example.org/*: %v", err)
	}
	_, err = carol.Create(ctx, bundle("example.com:other:one", "example.com/other"), metav1.CreateOptions{})
	wantForbiddenMsg(t, err, `clustertrustbundles.certificates.k8s.io "example.com:other:one" is forbidden: user not permitted to attest for signerName "example.com/other"`)

	// dave may write bundles but attests for nothing: a finalizer is his to add, the anchors are not.
	grant("dave-ctb", "dave", writer)
	_, daveRC := userConfig(t, s, "dave")
	dave := kubernetes.NewForConfigOrDie(daveRC).CertificatesV1().ClusterTrustBundles()
	eventuallyOK(t, "dave adds a finalizer", func() error {
		b, err := dave.Get(ctx, "example.com:signer:one", metav1.GetOptions{})
		if err != nil {
			return err
		}
		b.Finalizers = append(b.Finalizers, "example.com/keep")
		_, err = dave.Update(ctx, b, metav1.UpdateOptions{})
		return err
	})
	b, err := dave.Get(ctx, "example.com:signer:one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Finalizers = nil
	b.Labels = map[string]string{"tier": "gold"}
	_, err = dave.Update(ctx, b, metav1.UpdateOptions{})
	wantForbiddenMsg(t, err, `clustertrustbundles.certificates.k8s.io "example.com:signer:one" is forbidden: user not permitted to attest for signerName "example.com/signer"`)
}

// TestAdmissionPodTopologyLabels: a pod bound to a node through pods/binding, or created
// on it, carries the node's topology.kubernetes.io/zone and region labels (and no other
// node label); a Binding's own labels reach the pod too.
func TestAdmissionPodTopologyLabels(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	const ns = "topology"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "default service account", func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	mustCreate(t, cs.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zoned", Labels: map[string]string{
		"topology.kubernetes.io/zone": "eu-west-1a", "topology.kubernetes.io/region": "eu-west-1",
		"topology.kubernetes.io/rack": "r7", "kubernetes.io/hostname": "zoned"}}})
	want := map[string]string{"app": "web", "topology.kubernetes.io/zone": "eu-west-1a", "topology.kubernetes.io/region": "eu-west-1"}

	// The plugin reads nodes from an informer: a pod bound before it saw the node gets
	// nothing, so each try binds a new pod.
	var got map[string]string
	try := 0
	eventuallyOK(t, "a bound pod carries the node's topology labels", func() error {
		try++
		p := testPod(fmt.Sprintf("bound-%d", try))
		p.Labels = map[string]string{"app": "web", "topology.kubernetes.io/zone": "stale"}
		p = mustCreate(t, cs.CoreV1().Pods(ns).Create, p)
		if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "zoned"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "zoned" {
			t.Fatalf("bound to %q", p.Spec.NodeName)
		}
		got = p.Labels
		if got["topology.kubernetes.io/zone"] == "stale" {
			return fmt.Errorf("labels %v", got)
		}
		return nil
	})
	if !maps.Equal(got, want) {
		t.Fatalf("bound pod's labels %v, want %v", got, want)
	}

	// A new pod naming its node gets them at creation.
	p := testPod("direct")
	p.Labels = map[string]string{"app": "web"}
	p.Spec.NodeName = "zoned"
	if p = mustCreate(t, cs.CoreV1().Pods(ns).Create, p); !maps.Equal(p.Labels, want) {
		t.Fatalf("created pod's labels %v, want %v", p.Labels, want)
	}

	// A scheduler's own labels on the Binding reach the pod, overwriting the pod's.
	p = testPod("scheduled")
	p.Labels = map[string]string{"app": "web", "tier": "old"}
	mustCreate(t, cs.CoreV1().Pods(ns).Create, p)
	if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: map[string]string{"tier": "new"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "zoned"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := map[string]string{"app": "web", "tier": "new", "topology.kubernetes.io/zone": "eu-west-1a", "topology.kubernetes.io/region": "eu-west-1"}; !maps.Equal(p.Labels, w) {
		t.Fatalf("labels %v, want %v", p.Labels, w)
	}
}
