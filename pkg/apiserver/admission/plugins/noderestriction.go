package plugins

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// NodeRestriction is upstream's NodeRestriction plugin: a kubelet (user system:node:<name>
// in group system:nodes) may only change its own Node (not its taints, nor labels outside
// the kubelet's set), create mirror pods bound to itself, delete, evict and update the
// status of pods bound to itself, and touch only its own Lease and CSINode.
type NodeRestriction struct {
	admission.Operations
	getPod func(ctx context.Context, ns, name string) (runtime.Object, error)
}

// NewNodeRestriction reads a pod being evicted with getPod.
func NewNodeRestriction(getPod func(ctx context.Context, ns, name string) (runtime.Object, error)) *NodeRestriction {
	return &NodeRestriction{Operations: admission.Operations{admission.Create, admission.Update, admission.Delete}, getPod: getPod}
}

// nodeName is the node a request comes from, "" when not from a node.
func nodeName(a *admission.Attributes) string {
	u := a.User
	if u == nil || !strings.HasPrefix(u.Name, "system:node:") || !slices.Contains(u.Groups, "system:nodes") {
		return ""
	}
	return strings.TrimPrefix(u.Name, "system:node:")
}

// Validate refuses what a node may not do.
func (p *NodeRestriction) Validate(ctx context.Context, a *admission.Attributes) error {
	node := nodeName(a)
	if node == "" {
		return nil
	}
	var err error
	switch gr := a.Resource.GroupResource(); {
	case gr.Group == "" && gr.Resource == "pods":
		err = p.pod(ctx, node, a)
	case gr.Group == "" && gr.Resource == "nodes":
		err = p.node(node, a)
	case gr.Group == "coordination.k8s.io" && gr.Resource == "leases" && a.Namespace == corev1.NamespaceNodeLease:
		if a.Name != node {
			err = fmt.Errorf("can only access node lease with the same name as the requesting node")
		}
	case gr.Group == "storage.k8s.io" && gr.Resource == "csinodes":
		if a.Name != node {
			err = fmt.Errorf("can only access CSINode with the same name as the requesting node")
		}
	}
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

func podNode(obj runtime.Object) string {
	if pod, ok := obj.(*corev1.Pod); ok {
		return pod.Spec.NodeName
	}
	return ""
}

func (p *NodeRestriction) pod(ctx context.Context, node string, a *admission.Attributes) error {
	switch a.Subresource {
	case "":
	case "status":
		if a.Operation != admission.Update {
			return fmt.Errorf("unexpected operation %s", a.Operation)
		}
		if podNode(a.OldObject) != node {
			return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
		}
		return nil
	case "eviction":
		if a.Operation != admission.Create {
			return fmt.Errorf("unexpected operation %s", a.Operation)
		}
		obj, err := p.getPod(ctx, a.Namespace, a.Name)
		if err != nil {
			return err
		}
		if podNode(obj) != node {
			return fmt.Errorf("node %q can only evict pods with spec.nodeName set to itself", node)
		}
		return nil
	default:
		return fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
	}
	switch a.Operation {
	case admission.Create:
		pod, _ := a.Object.(*corev1.Pod)
		if pod == nil {
			return fmt.Errorf("unexpected object")
		}
		if _, mirror := pod.Annotations[mirrorPodAnnotation]; !mirror {
			return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorPodAnnotation, node)
		}
		if pod.Spec.NodeName != node {
			return fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node)
		}
		return nil
	case admission.Delete:
		if podNode(a.OldObject) != node {
			return fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node)
		}
		return nil
	}
	return fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
}

func (p *NodeRestriction) node(node string, a *admission.Attributes) error {
	if a.Operation == admission.Create {
		if n, ok := a.Object.(*corev1.Node); ok {
			if bad := forbiddenNodeLabels(n.Labels, nil); len(bad) > 0 {
				return fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
			}
		}
	}
	if a.Name != node {
		return fmt.Errorf("node %q is not allowed to modify node %q", node, a.Name)
	}
	if a.Operation == admission.Update {
		n, _ := a.Object.(*corev1.Node)
		old, _ := a.OldObject.(*corev1.Node)
		if n == nil || old == nil {
			return nil
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return fmt.Errorf("node %q is not allowed to modify taints", node)
		}
		if bad := forbiddenNodeLabels(n.Labels, old.Labels); len(bad) > 0 {
			return fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", "))
		}
	}
	return nil
}

// kubeletLabels are the kubernetes.io labels a kubelet may set on its Node (upstream's
// kubeletapis.KubeletLabels).
var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname": true, "kubernetes.io/arch": true, "kubernetes.io/os": true,
	"beta.kubernetes.io/arch": true, "beta.kubernetes.io/os": true, "beta.kubernetes.io/instance-type": true,
	"node.kubernetes.io/instance-type": true, "failure-domain.beta.kubernetes.io/zone": true,
	"failure-domain.beta.kubernetes.io/region": true, "topology.kubernetes.io/zone": true, "topology.kubernetes.io/region": true,
}

// forbiddenNodeLabels are the added, changed or removed labels a kubelet may not touch:
// node-restriction.kubernetes.io/ ones, and kubernetes.io or k8s.io ones outside the
// kubelet's set and the kubelet.kubernetes.io and node.kubernetes.io namespaces. Sorted.
func forbiddenNodeLabels(now, old map[string]string) []string {
	var bad []string
	check := func(k string) {
		if slices.Contains(bad, k) {
			return
		}
		ns, _, hasNS := strings.Cut(k, "/")
		if !hasNS {
			return
		}
		switch {
		case ns == "node-restriction.kubernetes.io" || strings.HasSuffix(ns, ".node-restriction.kubernetes.io"):
			bad = append(bad, k)
		case kubeletLabels[k]:
		case ns == "kubelet.kubernetes.io" || strings.HasSuffix(ns, ".kubelet.kubernetes.io"),
			ns == "node.kubernetes.io" || strings.HasSuffix(ns, ".node.kubernetes.io"):
		case ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io"):
			bad = append(bad, k)
		}
	}
	for k, v := range now {
		if ov, ok := old[k]; !ok || ov != v {
			check(k)
		}
	}
	for k := range old {
		if _, ok := now[k]; !ok {
			check(k)
		}
	}
	slices.Sort(bad)
	return bad
}
