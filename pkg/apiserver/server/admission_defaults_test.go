package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// wantForbiddenMsg fails unless err is a 403 whose message is want.
func wantForbiddenMsg(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}

// TestAdmissionUpstreamDefaults covers the rest of kube-apiserver 1.33's default plugins:
// TaintNodesByCondition, DefaultTolerationSeconds, StorageObjectInUseProtection,
// PersistentVolumeClaimResize, RuntimeClass, DefaultIngressClass and the certificate ones.
func TestAdmissionUpstreamDefaults(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.DefaultUnreachableTolerationSeconds = 120 })
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	const ns = "defaults"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "default service account", func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})

	t.Run("TaintNodesByCondition", func(t *testing.T) {
		n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fresh"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(n.Spec.Taints); got != "[{dedicated db NoSchedule <nil>} {node.kubernetes.io/not-ready  NoSchedule <nil>}]" {
			t.Fatalf("taints %s", got)
		}
		// The node lifecycle controller's removal of the taint is an update: not taken back.
		n.Spec.Taints = n.Spec.Taints[:1]
		if n, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil || len(n.Spec.Taints) != 1 {
			t.Fatalf("update: %v %v", n.Spec.Taints, err)
		}
	})

	t.Run("DefaultTolerationSeconds", func(t *testing.T) {
		p, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("tol"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tol := range p.Spec.Tolerations {
			got = append(got, fmt.Sprintf("%s %s %s %d", tol.Key, tol.Operator, tol.Effect, *tol.TolerationSeconds))
		}
		if want := "[node.kubernetes.io/not-ready Exists NoExecute 300 node.kubernetes.io/unreachable Exists NoExecute 120]"; fmt.Sprint(got) != want {
			t.Fatalf("tolerations %q, want %s", got, want)
		}
		// A pod tolerating not-ready with any effect keeps its own and gets unreachable only.
		own := testPod("own")
		own.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}
		if p, err = cs.CoreV1().Pods(ns).Create(ctx, own, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.Tolerations) != 2 || p.Spec.Tolerations[0].TolerationSeconds != nil || p.Spec.Tolerations[1].Key != corev1.TaintNodeUnreachable {
			t.Fatalf("tolerations %+v", p.Spec.Tolerations)
		}
	})

	t.Run("StorageObjectInUseProtection and PersistentVolumeClaimResize", func(t *testing.T) {
		for _, sc := range []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "grows"}, Provisioner: "example.com/x", AllowVolumeExpansion: ptr.To(true)},
			{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: "example.com/x"},
		} {
			if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pv, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "vol"}, Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/x"}}}}, metav1.CreateOptions{})
		if err != nil || !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
			t.Fatalf("pv finalizers %v, %v", pv.Finalizers, err)
		}
		claim := func(name, class string) *corev1.PersistentVolumeClaim {
			c, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{})
			if err != nil || !slices.Contains(c.Finalizers, "kubernetes.io/pvc-protection") {
				t.Fatalf("pvc %s finalizers %v, %v", name, c.Finalizers, err)
			}
			return c
		}
		bind := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
			c.Status.Phase = corev1.ClaimBound
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
			c, err := cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, c, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		grow := func(c *corev1.PersistentVolumeClaim) error {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			_, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{})
			return err
		}
		// An unbound claim's spec is immutable: validation refuses its growth before the
		// plugin's own check, as upstream.
		if err := grow(claim("unbound", "grows")); !apierrors.IsInvalid(err) {
			t.Fatalf("growing an unbound claim: %v", err)
		}
		wantForbiddenMsg(t, grow(bind(claim("fixed", "fixed"))), `persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`)
		grows := bind(claim("grows", "grows"))
		eventuallyOK(t, "resize with expansion allowed", func() error {
			c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "grows", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			grows = c
			return grow(grows)
		})
	})

	t.Run("RuntimeClass", func(t *testing.T) {
		named := func(name, class string) *corev1.Pod {
			p := testPod(name)
			p.Spec.RuntimeClassName = ptr.To(class)
			return p
		}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, named("nope", "missing"), metav1.CreateOptions{})
		wantForbiddenMsg(t, err, `pods "nope" is forbidden: pod rejected: RuntimeClass "missing" not found`)
		overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
			Overhead: &nodev1.Overhead{PodFixed: overhead},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
				Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var p *corev1.Pod
		eventuallyOK(t, "pod of a RuntimeClass", func() error {
			p, err = cs.CoreV1().Pods(ns).Create(ctx, named("sandboxed", "gvisor"), metav1.CreateOptions{})
			return err
		})
		if p.Spec.Overhead.Cpu().String() != "250m" || p.Spec.NodeSelector["sandbox"] != "gvisor" || !slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "sandbox" }) {
			t.Fatalf("overhead %v, node selector %v, tolerations %v", p.Spec.Overhead, p.Spec.NodeSelector, p.Spec.Tolerations)
		}
		clash := named("clash", "gvisor")
		clash.Spec.NodeSelector = map[string]string{"sandbox": "kata"}
		_, err = cs.CoreV1().Pods(ns).Create(ctx, clash, metav1.CreateOptions{})
		wantForbiddenMsg(t, err, `pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata`)
		bare := testPod("bare")
		bare.Spec.Overhead = overhead
		_, err = cs.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{})
		wantForbiddenMsg(t, err, `pods "bare" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`)
	})

	t.Run("DefaultIngressClass", func(t *testing.T) {
		for _, name := range []string{"nginx", "traefik"} {
			ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
			if name == "traefik" {
				ic.Annotations = map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}
			}
			if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, ic, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		ing := func(name string, annotations map[string]string) *networkingv1.Ingress {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: networkingv1.IngressSpec{
				DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		}
		eventuallyOK(t, "default ingress class", func() error {
			got, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing(fmt.Sprintf("web-%d", len(ns)), nil), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.IngressClassName == nil || *got.Spec.IngressClassName != "traefik" {
				_ = cs.NetworkingV1().Ingresses(ns).Delete(ctx, got.Name, metav1.DeleteOptions{})
				return fmt.Errorf("ingressClassName %v", got.Spec.IngressClassName)
			}
			return nil
		})
		legacy, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing("legacy", map[string]string{"kubernetes.io/ingress.class": "nginx"}), metav1.CreateOptions{})
		if err != nil || legacy.Spec.IngressClassName != nil {
			t.Fatalf("an Ingress with the legacy annotation got class %v, %v", legacy.Spec.IngressClassName, err)
		}
	})

	t.Run("certificates", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		request := func(cn string, orgs ...string) []byte {
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
			if err != nil {
				t.Fatal(err)
			}
			return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
		}
		csr := func(name string, req []byte) *certificatesv1.CertificateSigningRequest {
			return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: req, SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
		}
		_, err = cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr("root", request("mallory", "system:masters")), metav1.CreateOptions{})
		wantForbiddenMsg(t, err, `certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`)
		c, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr("dev", request("dev", "devs")), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		// bob may update the approval subresource but not approve for the signer.
		mustCreate(t, cs.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "csr-approval"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval"}, Verbs: []string{"get", "update"}}}})
		mustCreate(t, cs.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-csr-approval"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "csr-approval"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}})
		_, bobRC := userConfig(t, s, "bob")
		bob := kubernetes.NewForConfigOrDie(bobRC)
		approve := func() error {
			cur, err := bob.CertificatesV1().CertificateSigningRequests().Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
			_, err = bob.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, cur, metav1.UpdateOptions{})
			return err
		}
		var last error
		eventuallyOK(t, "bob's approval reaches the plugin", func() error {
			last = approve()
			if last != nil && strings.Contains(last.Error(), "user not permitted") {
				return nil
			}
			return fmt.Errorf("got %v", last)
		})
		wantForbiddenMsg(t, last, `certificatesigningrequests.certificates.k8s.io "dev" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`)
		// approve on the signer's domain wildcard is enough.
		mustCreate(t, cs.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "signer-approver"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"kubernetes.io/*"}, Verbs: []string{"approve"}}}})
		mustCreate(t, cs.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-signer-approver"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "signer-approver"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}})
		eventuallyOK(t, "bob approves with approve on kubernetes.io/*", approve)

		// Setting the certificate needs sign: bob has no status rights at all, admin has both.
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status.Certificate = s.Certs().CAPEM
		if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("admin signs: %v", err)
		}
	})
}
