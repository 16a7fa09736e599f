package plugins

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	corev1 "k8s.io/api/core/v1"
)

// TaintNodesByCondition is upstream's plugin of that name: a new Node gets the
// node.kubernetes.io/not-ready:NoSchedule taint, which kube-controller-manager's node
// lifecycle controller removes once the node reports Ready, so nothing is scheduled to a
// node before its agent said it is ready.
type TaintNodesByCondition struct{ admission.Operations }

// NewTaintNodesByCondition returns the plugin.
func NewTaintNodesByCondition() *TaintNodesByCondition {
	return &TaintNodesByCondition{admission.Operations{admission.Create}}
}

// Admit adds the taint unless the node has one of the same key and effect.
func (TaintNodesByCondition) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "nodes" || a.Subresource != "" {
		return nil
	}
	node, ok := a.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&notReady) {
			return nil
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, notReady)
	return nil
}

// DefaultTolerationSeconds is upstream's plugin of that name: a new pod that does not
// tolerate the node.kubernetes.io/not-ready and node.kubernetes.io/unreachable NoExecute
// taints gets tolerations of them for a while (kube-apiserver's
// --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds, 300 s
// each), after which the taint manager evicts it from a failed node.
type DefaultTolerationSeconds struct {
	admission.Operations
	notReady, unreachable int64
}

// NewDefaultTolerationSeconds returns the plugin with the two durations in seconds.
func NewDefaultTolerationSeconds(notReady, unreachable int64) *DefaultTolerationSeconds {
	return &DefaultTolerationSeconds{Operations: admission.Operations{admission.Create}, notReady: notReady, unreachable: unreachable}
}

// Admit adds the tolerations the pod lacks.
func (d *DefaultTolerationSeconds) Admit(_ context.Context, a *admission.Attributes) error {
	if !isPod(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	// A toleration with an empty key (Exists) or an empty effect covers the taint too.
	tolerates := func(key string) bool {
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				return true
			}
		}
		return false
	}
	add := func(key string, seconds int64) {
		if !tolerates(key) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
	add(corev1.TaintNodeNotReady, d.notReady)
	add(corev1.TaintNodeUnreachable, d.unreachable)
	return nil
}
