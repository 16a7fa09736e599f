package plugins

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RuntimeClass is upstream's plugin of that name: a new pod naming a RuntimeClass must name
// one that exists; it gets the class's pod overhead and its scheduling constraints (node
// selector, tolerations); an overhead the class does not define is refused.
type RuntimeClass struct {
	admission.Operations
	classes *informer.Informer[*nodev1.RuntimeClass]
}

// NewRuntimeClass reads RuntimeClasses from the shared informers.
func NewRuntimeClass(f *informer.Factory) *RuntimeClass {
	return &RuntimeClass{Operations: admission.Operations{admission.Create}, classes: informer.For[*nodev1.RuntimeClass](f, schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"})}
}

// Start waits until the class informer holds its first list.
func (r *RuntimeClass) Start(ctx context.Context) { _ = r.classes.WaitForSync(ctx) }

// class is the pod's RuntimeClass, nil when it names none.
func (r *RuntimeClass) class(a *admission.Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || !isPod(a) {
		return nil, nil, nil
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	rc, ok := r.classes.Get("", *pod.Spec.RuntimeClassName)
	if !ok {
		return nil, nil, admission.NewForbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName))
	}
	return pod, rc, nil
}

// Admit sets the overhead and merges the class's scheduling constraints.
func (r *RuntimeClass) Admit(_ context.Context, a *admission.Attributes) error {
	pod, rc, err := r.class(a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if pod.Spec.Overhead != nil && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		if pod.Spec.NodeSelector == nil && len(s.NodeSelector) > 0 {
			pod.Spec.NodeSelector = map[string]string{}
		}
		for k, v := range s.NodeSelector {
			if pv, ok := pod.Spec.NodeSelector[k]; ok && pv != v {
				return admission.NewForbidden(a, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv))
			}
			pod.Spec.NodeSelector[k] = v
		}
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

// Validate refuses an overhead that is not the class's.
func (r *RuntimeClass) Validate(_ context.Context, a *admission.Attributes) error {
	pod, rc, err := r.class(a)
	if err != nil || pod == nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
	} else if pod.Spec.Overhead != nil {
		return admission.NewForbidden(a, fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
	}
	return nil
}

// mergeTolerations adds to have each of add that none of have already covers (the same
// key, effect and operator/value, or a toleration of every key or every effect).
func mergeTolerations(have, add []corev1.Toleration) []corev1.Toleration {
	out := have
	for _, t := range add {
		covered := false
		for _, h := range out {
			if h.MatchToleration(&t) || (h.Key == "" && h.Operator == corev1.TolerationOpExists && (h.Effect == "" || h.Effect == t.Effect)) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, t)
		}
	}
	return out
}
