package authz

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/request"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// nodeGraph is a graph with pod p1 on n1 (Secret s1, claim c1 bound to PV pv1), pod p2 on
// n2 (Secret s2, claim c2 bound to PV pv2) and VolumeAttachments va1 (n1) and va2 (n2).
func nodeGraph() *Node {
	n := newNode()
	pod := func(name, node, secret, claim string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
		}}}
	}
	n.applyPod(false, pod("p1", "n1", "s1", "c1"))
	n.applyPod(false, pod("p2", "n2", "s2", "c2"))
	pv := func(name, claim string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: claim}}}
	}
	applyPV := nameIndex(n, &n.pvClaims, pvClaim)
	applyPV(false, pv("pv1", "c1"))
	applyPV(false, pv("pv2", "c2"))
	va := func(name, node string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.VolumeAttachmentSpec{NodeName: node}}
	}
	applyVA := nameIndex(n, &n.vaNodes, vaNode)
	applyVA(false, va("va1", "n1"))
	applyVA(false, va("va2", "n2"))
	return n
}

// TestNodeDecisions: what kubelet n1 may do, as upstream's Node authorizer v1.33 decides
// (with AuthorizeNodeWithSelectors), with hacp's graph.
func TestNodeDecisions(t *testing.T) {
	n := nodeGraph()
	sel := func(s string) fields.Requirements { return fields.ParseSelectorOrDie(s).Requirements() }
	for _, tc := range []struct {
		name string
		a    Attributes
		want Decision
	}{
		{"own pod's secret", Attributes{Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s1"}, Allow},
		{"other pod's secret", Attributes{Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s2"}, NoOpinion},
		{"secret list", Attributes{Verb: "list", Resource: "secrets", Namespace: "ns"}, NoOpinion},
		{"secret update", Attributes{Verb: "update", Resource: "secrets", Namespace: "ns", Name: "s1"}, NoOpinion},
		{"own claim", Attributes{Verb: "get", Resource: "persistentvolumeclaims", Namespace: "ns", Name: "c1"}, Allow},
		{"own claim's status", Attributes{Verb: "patch", Resource: "persistentvolumeclaims", Subresource: "status", Namespace: "ns", Name: "c1"}, Allow},
		{"other claim's status", Attributes{Verb: "patch", Resource: "persistentvolumeclaims", Subresource: "status", Namespace: "ns", Name: "c2"}, NoOpinion},
		{"own pv", Attributes{Verb: "get", Resource: "persistentvolumes", Name: "pv1"}, Allow},
		{"other pv", Attributes{Verb: "get", Resource: "persistentvolumes", Name: "pv2"}, NoOpinion},
		{"pv list", Attributes{Verb: "list", Resource: "persistentvolumes"}, NoOpinion},
		{"own attachment", Attributes{Verb: "get", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "va1"}, Allow},
		{"other attachment", Attributes{Verb: "get", APIGroup: "storage.k8s.io", Resource: "volumeattachments", Name: "va2"}, NoOpinion},
		{"own node", Attributes{Verb: "get", Resource: "nodes", Name: "n1"}, Allow},
		{"other node", Attributes{Verb: "get", Resource: "nodes", Name: "n2"}, NoOpinion},
		{"all nodes", Attributes{Verb: "list", Resource: "nodes"}, NoOpinion},
		{"own node by selector", Attributes{Verb: "watch", Resource: "nodes", Name: "n1"}, Allow},
		{"node create", Attributes{Verb: "create", Resource: "nodes"}, Allow},
		{"own node status", Attributes{Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1"}, Allow},
		{"other node status", Attributes{Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n2"}, NoOpinion},
		{"node delete", Attributes{Verb: "delete", Resource: "nodes", Name: "n1"}, NoOpinion},
		{"own pod", Attributes{Verb: "get", Resource: "pods", Namespace: "ns", Name: "p1"}, Allow},
		{"other pod", Attributes{Verb: "get", Resource: "pods", Namespace: "ns", Name: "p2"}, NoOpinion},
		{"all pods", Attributes{Verb: "list", Resource: "pods"}, NoOpinion},
		{"own pods by selector", Attributes{Verb: "watch", Resource: "pods", FieldSelector: sel("spec.nodeName=n1")}, Allow},
		{"other node's pods", Attributes{Verb: "list", Resource: "pods", FieldSelector: sel("spec.nodeName=n2")}, NoOpinion},
		{"not-equals selector", Attributes{Verb: "list", Resource: "pods", FieldSelector: sel("spec.nodeName!=n2")}, NoOpinion},
		{"own pod's status", Attributes{Verb: "update", Resource: "pods", Subresource: "status", Namespace: "ns", Name: "p1"}, Allow},
		{"other pod's status", Attributes{Verb: "update", Resource: "pods", Subresource: "status", Namespace: "ns", Name: "p2"}, NoOpinion},
		{"eviction", Attributes{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "ns", Name: "p1"}, Allow},
		{"exec", Attributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "ns", Name: "p1"}, NoOpinion},
		{"own lease", Attributes{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-node-lease", Name: "n1"}, Allow},
		{"other lease", Attributes{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-node-lease", Name: "n2"}, NoOpinion},
		{"lease elsewhere", Attributes{Verb: "patch", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "ns", Name: "n1"}, NoOpinion},
		{"lease list", Attributes{Verb: "list", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-node-lease"}, NoOpinion},
		{"own csinode", Attributes{Verb: "update", APIGroup: "storage.k8s.io", Resource: "csinodes", Name: "n1"}, Allow},
		{"other csinode", Attributes{Verb: "get", APIGroup: "storage.k8s.io", Resource: "csinodes", Name: "n2"}, NoOpinion},
		{"service account token", Attributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "ns", Name: "default"}, Allow},
		{"service account get", Attributes{Verb: "get", Resource: "serviceaccounts", Namespace: "ns", Name: "default"}, Allow}, // KubeletServiceAccountTokenForCredentialProviders, on since 1.34
		{"resource slices on the node", Attributes{Verb: "list", APIGroup: "resource.k8s.io", Resource: "resourceslices", FieldSelector: sel("spec.nodeName=n1")}, Allow},
		{"all resource slices", Attributes{Verb: "list", APIGroup: "resource.k8s.io", Resource: "resourceslices"}, NoOpinion},
		{"services (node rules)", Attributes{Verb: "list", Resource: "services"}, Allow},
		{"deployments", Attributes{Verb: "list", APIGroup: "apps", Resource: "deployments"}, NoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.User = &request.User{Name: "system:node:n1", Groups: []string{"system:nodes", request.AllAuthenticated}}
			tc.a.ResourceRequest = true
			d, reason, err := n.Authorize(context.Background(), tc.a)
			if err != nil || d != tc.want {
				t.Fatalf("got %v (%q, %v), want %v", d, reason, err, tc.want)
			}
		})
	}
	// Only nodes are judged, and a deleted pod takes its relations with it.
	if d, _, _ := n.Authorize(context.Background(), Attributes{User: &request.User{Name: "system:node:n1"}, ResourceRequest: true, Verb: "list", Resource: "services"}); d != NoOpinion {
		t.Errorf("a user outside system:nodes: %v, want NoOpinion", d)
	}
	n.applyPod(true, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "ns"}})
	for _, a := range []Attributes{{Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s1"}, {Verb: "get", Resource: "persistentvolumes", Name: "pv1"}} {
		a.User, a.ResourceRequest = &request.User{Name: "system:node:n1", Groups: []string{"system:nodes"}}, true
		if d, _, _ := n.Authorize(context.Background(), a); d != NoOpinion {
			t.Errorf("%s %s after the pod's deletion: %v, want NoOpinion", a.Resource, a.Name, d)
		}
	}
}
