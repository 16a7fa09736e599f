package plugins

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// topologyLabels are the node labels upstream's PodTopologyLabels copies (its default
// configuration, which kube-apiserver uses).
var topologyLabels = []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion}

// readyWait is how long a request waits for the node informer's first list (upstream's
// admission handlers wait 10 s for their caches).
const readyWait = 10 * time.Second

// PodTopologyLabels is upstream's plugin of that name (feature PodTopologyLabelsAdmission,
// on by default since 1.35): a pod bound to a node (its binding subresource, or a new pod
// naming its node) gets the node's topology.kubernetes.io/zone and region labels, so that
// workloads can learn where they run. On a binding the labels go on the Binding, whose
// labels the binding copies onto the pod.
type PodTopologyLabels struct {
	admission.Operations
	node  func(name string) (*corev1.Node, bool)
	ready func(ctx context.Context) bool
}

// NewPodTopologyLabels reads Nodes from the shared informers.
func NewPodTopologyLabels(f *informer.Factory) *PodTopologyLabels {
	nodes := informer.For[*corev1.Node](f, schema.GroupResource{Resource: "nodes"})
	return newPodTopologyLabels(func(name string) (*corev1.Node, bool) { return nodes.Get("", name) },
		func(ctx context.Context) bool {
			ctx, cancel := context.WithTimeout(ctx, readyWait)
			defer cancel()
			return nodes.WaitForSync(ctx) == nil
		})
}

func newPodTopologyLabels(node func(string) (*corev1.Node, bool), ready func(context.Context) bool) *PodTopologyLabels {
	return &PodTopologyLabels{Operations: admission.Operations{admission.Create}, node: node, ready: ready}
}

// Start waits until the node informer holds its first list.
func (p *PodTopologyLabels) Start(ctx context.Context) { p.ready(ctx) }

// Admit copies the node's topology labels onto a Binding to a Node or a new pod with a node
// name, overwriting labels of the same keys.
func (p *PodTopologyLabels) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "pods" {
		return nil
	}
	var nodeName string
	var labels *map[string]string
	switch a.Subresource {
	case "":
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("expected Pod but got %T", a.Object)
		}
		nodeName, labels = pod.Spec.NodeName, &pod.Labels
	case "binding":
		b, ok := a.Object.(*corev1.Binding)
		if !ok {
			return fmt.Errorf("expected Binding but got %s", a.Kind.Kind)
		}
		labels = &b.Labels
		if b.Target.Kind == "Node" { // only the kind is checked: the scheduler sets nothing else
			nodeName = b.Target.Name
		}
	default:
		return nil
	}
	if !p.ready(ctx) {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	if nodeName == "" {
		return nil // not scheduled yet, or bound to something else than a Node
	}
	node, ok := p.node(nodeName)
	if !ok {
		return nil // an unknown node adds nothing, as upstream
	}
	for _, k := range topologyLabels {
		v, ok := node.Labels[k]
		if !ok {
			continue
		}
		if *labels == nil {
			*labels = map[string]string{}
		}
		(*labels)[k] = v
	}
	return nil
}
