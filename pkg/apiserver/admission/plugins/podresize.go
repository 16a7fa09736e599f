package plugins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/resource"
)

// The causes PodResizeValidator adds to its refusals (upstream's ReasonNodeCapacity and
// ReasonUnsupportedPlatform).
const (
	CauseNodeCapacity        metav1.CauseType = "NodeCapacity"
	CauseUnsupportedPlatform metav1.CauseType = "UnsupportedPlatform"
)

// readyTimeout is how long a plugin waits for its informers before refusing a request
// (upstream's admission.Handler.WaitForReady).
const readyTimeout = 10 * time.Second

// PodResizeValidator is upstream's plugin of that name: a resize (pods/resize) of a pod bound
// to a node, that changes the pod's spec, is refused when the node is unknown, is not a
// Linux node, or cannot hold the pod's new cpu or memory requests.
type PodResizeValidator struct {
	admission.Operations
	nodes *informer.Informer[*corev1.Node]
}

// NewPodResizeValidator reads Nodes from the shared informers.
func NewPodResizeValidator(f *informer.Factory) *PodResizeValidator {
	return &PodResizeValidator{Operations: admission.Operations{admission.Update}, nodes: nodeInformer(f)}
}

func nodeInformer(f *informer.Factory) *informer.Informer[*corev1.Node] {
	return informer.For[*corev1.Node](f, schema.GroupResource{Resource: "nodes"})
}

// Start waits until the node informer holds its first list.
func (p *PodResizeValidator) Start(ctx context.Context) { _ = p.nodes.WaitForSync(ctx) }

// Validate refuses a resize the pod's node cannot take.
func (p *PodResizeValidator) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Update || a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "resize" {
		return nil
	}
	pod, old, err := boundPodUpdate(a)
	if err != nil || pod == nil || old.Generation == pod.Generation {
		return err
	}
	node, err := boundNode(ctx, a, p.nodes, pod.Spec.NodeName)
	if err != nil {
		return err
	}
	// The os label is always set by the kubelet; without it the node counts as Linux.
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return resizeRefused(a, fmt.Errorf("pod resize is only supported on linux nodes, node %q is %q", node.Name, os), CauseUnsupportedPlatform)
	}
	if err := requestsWithinAllocatable(pod, node.Status.Allocatable); err != nil {
		return resizeRefused(a, err, CauseNodeCapacity)
	}
	return nil
}

// boundPodUpdate is the new and old pod of a pod update; a nil pod when the pod is bound to
// no node (nothing to check).
func boundPodUpdate(a *admission.Attributes) (pod, old *corev1.Pod, err error) {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected a pod but got a %T", a.Object))
	}
	if pod.Spec.NodeName == "" {
		return nil, nil, nil
	}
	old, ok = a.OldObject.(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected an old pod but got a %T", a.OldObject))
	}
	return pod, old, nil
}

// boundNode is the node named name from nodes, waiting a while for the informer's first
// list; upstream's refusals when it is not synced or the node is unknown.
func boundNode(ctx context.Context, a *admission.Attributes, nodes *informer.Informer[*corev1.Node], name string) (*corev1.Node, error) {
	if !nodes.HasSynced() {
		wait, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		if nodes.WaitForSync(wait) != nil {
			return nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
		}
	}
	node, ok := nodes.Get("", name)
	if !ok {
		return nil, admission.NewForbidden(a, fmt.Errorf("node %q not found", name))
	}
	return node, nil
}

// resizeRefused is a Forbidden error with reason as its cause, as upstream's.
func resizeRefused(a *admission.Attributes, err error, reason metav1.CauseType) error {
	forbidden := admission.NewForbidden(a, err)
	var st *apierrors.StatusError
	if errors.As(forbidden, &st) && st.ErrStatus.Details != nil {
		st.ErrStatus.Details.Causes = append(st.ErrStatus.Details.Causes, metav1.StatusCause{Type: reason})
	}
	return forbidden
}

// requestsWithinAllocatable refuses a pod whose cpu or memory requests (with pod-level
// resources and overhead) exceed a node's allocatable, in upstream's words.
func requestsWithinAllocatable(pod *corev1.Pod, allocatable corev1.ResourceList) error {
	requests := resource.PodRequests(pod, resource.PodResourcesOptions{})
	cpu, mem := requests[corev1.ResourceCPU], requests[corev1.ResourceMemory]
	var msg []string
	if cpu.Cmp(*allocatable.Cpu()) > 0 {
		msg = append(msg, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpu.MilliValue(), allocatable.Cpu().MilliValue()))
	}
	if mem.Cmp(*allocatable.Memory()) > 0 {
		msg = append(msg, fmt.Sprintf("memory, requested: %d, allocatable: %d", mem.Value(), allocatable.Memory().Value()))
	}
	if len(msg) > 0 {
		return fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(msg, "; "))
	}
	return nil
}
