package plugins

import (
	"context"
	"fmt"
	"strings"

	"github.com/hacp/hacp/internal/version"
	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// NodeDeclaredFeatureValidator is upstream's plugin of that name: an update of a pod bound
// to a node (the pod itself or pods/resize) that changes the pod's spec in a way only some
// nodes support (upstream's feature list, k8s.io/component-helpers/nodedeclaredfeatures:
// resizing pod-level resources, non-sidecar init containers, memory-backed volumes) is
// refused unless the node lists each such feature in status.declaredFeatures.
//
// Upstream's check of ResourceSlices with node-allocatable resources belongs to the
// DRANodeAllocatableResources gate, alpha and off in 1.37; hacp does not do it.
type NodeDeclaredFeatureValidator struct {
	admission.Operations
	nodes     *informer.Informer[*corev1.Node]
	features  *ndf.Framework
	kubeLevel *utilversion.Version // the release served, which features may be bounded by
}

// NewNodeDeclaredFeatureValidator reads Nodes from the shared informers.
func NewNodeDeclaredFeatureValidator(f *informer.Factory) *NodeDeclaredFeatureValidator {
	return &NodeDeclaredFeatureValidator{Operations: admission.Operations{admission.Update}, nodes: nodeInformer(f),
		features: ndf.DefaultFramework, kubeLevel: utilversion.MustParseGeneric(version.KubernetesMajor + "." + version.KubernetesMinor)}
}

// Start waits until the node informer holds its first list.
func (p *NodeDeclaredFeatureValidator) Start(ctx context.Context) { _ = p.nodes.WaitForSync(ctx) }

// Validate refuses a pod update that needs features the pod's node has not declared.
func (p *NodeDeclaredFeatureValidator) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Update || a.Resource.Group != "" || a.Resource.Resource != "pods" || (a.Subresource != "" && a.Subresource != "resize") {
		return nil
	}
	pod, old, err := boundPodUpdate(a)
	if err != nil || pod == nil || old.Generation == pod.Generation {
		return err
	}
	// The feature checks compare containers by index; a change in their number is refused
	// by the pod's own validation, which runs first upstream as here.
	if len(old.Spec.InitContainers) != len(pod.Spec.InitContainers) || len(old.Spec.Containers) != len(pod.Spec.Containers) {
		return nil
	}
	reqs, err := p.features.InferForPodUpdate(&ndf.PodInfo{Spec: &old.Spec, Status: &old.Status}, &ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, p.kubeLevel)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to infer pod capability requirements: %w", err))
	}
	if reqs.IsEmpty() {
		return nil
	}
	node, err := boundNode(ctx, a, p.nodes, pod.Spec.NodeName)
	if err != nil {
		return err
	}
	result, err := p.features.MatchNode(reqs, node)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to match pod requirements against node %q: %w", node.Name, err))
	}
	if !result.IsMatch {
		return admission.NewForbidden(a, fmt.Errorf("pod update requires features %s which are not available on node %q", strings.Join(result.UnsatisfiedRequirements, ", "), node.Name))
	}
	return nil
}
