package plugins

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Priority is upstream's Priority plugin: a pod's priorityClassName becomes its priority
// (and preemptionPolicy); a pod without one gets the globalDefault class, or priority 0; and
// at most one PriorityClass is the global default.
type Priority struct {
	admission.Operations
	classes *informer.Informer[*schedulingv1.PriorityClass]
}

// NewPriority reads PriorityClasses from the shared informers.
func NewPriority(f *informer.Factory) *Priority {
	return &Priority{Operations: admission.Operations{admission.Create, admission.Update}, classes: informer.For[*schedulingv1.PriorityClass](f, schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"})}
}

// Start waits until the class informer holds its first list.
func (p *Priority) Start(ctx context.Context) { _ = p.classes.WaitForSync(ctx) }

func isPriorityClass(a *admission.Attributes) bool {
	return a.Resource.Group == "scheduling.k8s.io" && a.Resource.Resource == "priorityclasses" && a.Subresource == ""
}

// defaultClass is the global default class with the lowest value (more than one can exist
// after a race, as upstream notes), nil when none.
func (p *Priority) defaultClass() *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for _, pc := range p.classes.List("") {
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def
}

// Admit resolves a new pod's priority.
func (p *Priority) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Create || !isPod(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	var priority int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		if def := p.defaultClass(); def != nil {
			pod.Spec.PriorityClassName = def.Name
			priority, policy = def.Value, def.PreemptionPolicy
		}
	} else {
		pc, ok := p.classes.Get("", pod.Spec.PriorityClassName)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		priority, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		pp := *policy
		pod.Spec.PreemptionPolicy = &pp
	}
	return nil
}

// Validate keeps a single global default PriorityClass.
func (p *Priority) Validate(_ context.Context, a *admission.Attributes) error {
	if !isPriorityClass(a) || a.Operation == admission.Delete {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	if def := p.defaultClass(); def != nil && def.Name != pc.Name {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}
