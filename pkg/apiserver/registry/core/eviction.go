package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// pdbResource is where the PodDisruptionBudgets eviction respects are served.
var pdbResource = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}

// maxDisruptedPods is upstream's MaxDisruptedPodSize.
const maxDisruptedPods = 2000

// EvictionStore serves pods/eviction (policy/v1 Eviction, create only): it deletes the pod
// unless the one PodDisruptionBudget selecting it allows no disruption (429), as upstream.
type EvictionStore struct {
	pods *registry.Store
	// pdbs returns the PodDisruptionBudget store, nil when that kind is not served.
	pdbs func() *registry.Store
}

func (e *EvictionStore) New() runtime.Object { return &policyv1.Eviction{} }
func (e *EvictionStore) Kind() schema.GroupVersionKind {
	return policyv1.SchemeGroupVersion.WithKind("Eviction")
}

func (e *EvictionStore) Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	ev, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Eviction object: %T", obj))
	}
	if ev.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	delOpts := &metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		delOpts = ev.DeleteOptions.DeepCopy()
	}
	if delOpts.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *delOpts.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "policy", Kind: "Eviction"}, name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions", "ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option")})
	}
	dry := opts != nil && registry.DryRun(opts.DryRun)
	if dry {
		delOpts.DryRun = []string{metav1.DryRunAll}
	}
	cur, err := e.pods.Get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := cur.(*corev1.Pod)
	// A terminal, pending or deleting pod disrupts nothing more: no budget is consulted.
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed &&
		pod.Status.Phase != corev1.PodPending && pod.DeletionTimestamp == nil {
		if st, err := e.takeDisruption(ctx, pod, dry); err != nil || st != nil {
			return st, err
		}
		if delOpts.Preconditions == nil {
			delOpts.Preconditions = &metav1.Preconditions{}
		}
		if delOpts.Preconditions.ResourceVersion == nil {
			rv := pod.ResourceVersion // no racing with another budget-changing eviction
			delOpts.Preconditions.ResourceVersion = &rv
		}
	}
	if _, _, err := e.pods.Delete(ctx, ns, name, delOpts); err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: 201}, nil
}

// takeDisruption decrements the disruptions the pod's budget allows, or refuses the eviction
// (a Status to answer, or a 429 error).
func (e *EvictionStore) takeDisruption(ctx context.Context, pod *corev1.Pod, dry bool) (*metav1.Status, error) {
	if e.pdbs == nil || e.pdbs() == nil {
		return nil, nil
	}
	pdbs := e.pdbs()
	list, err := pdbs.List(ctx, pod.Namespace, &metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items, err := registry.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var matching []*policyv1.PodDisruptionBudget
	for _, it := range items {
		pdb, ok := it.(*policyv1.PodDisruptionBudget)
		if !ok {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matching = append(matching, pdb)
	}
	switch len(matching) {
	case 0:
		return nil, nil
	case 1:
	default:
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", Code: 500}, nil
	}
	pdb := matching[0]
	if !podReady(pod) {
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
			return nil, nil
		}
		if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return nil, nil
		}
	}
	if dry {
		return nil, checkDisruption(pdb)
	}
	_, _, err = pdbs.UpdateSubresource(ctx, pdb.Namespace, pdb.Name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		return cur, nil
	}, &metav1.UpdateOptions{}, func(current, _ runtime.Object) (runtime.Object, field.ErrorList, error) {
		cur := current.(*policyv1.PodDisruptionBudget)
		if err := checkDisruption(cur); err != nil {
			return nil, nil, err
		}
		cur.Status.DisruptionsAllowed--
		if cur.Status.DisruptionsAllowed == 0 {
			setDisruptionAllowedCondition(cur)
		}
		if cur.Status.DisruptedPods == nil {
			cur.Status.DisruptedPods = map[string]metav1.Time{}
		}
		cur.Status.DisruptedPods[pod.Name] = metav1.Time{Time: time.Now()}
		return cur, nil, nil
	})
	return nil, err
}

// checkDisruption is upstream's checkAndDecrement without the decrement.
func checkDisruption(pdb *policyv1.PodDisruptionBudget) error {
	gr := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name)})
		return err
	case pdb.Status.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(gr, pdb.Name, errors.New("pdb disruptions allowed is negative"))
	case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
		return apierrors.NewForbidden(gr, pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	case pdb.Status.DisruptionsAllowed == 0:
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)})
		return err
	}
	return nil
}

// setDisruptionAllowedCondition is upstream's UpdateDisruptionAllowedCondition at zero.
func setDisruptionAllowedCondition(pdb *policyv1.PodDisruptionBudget) {
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason,
		ObservedGeneration: pdb.Status.ObservedGeneration, LastTransitionTime: metav1.Now()}
	for i, c := range pdb.Status.Conditions {
		if c.Type == cond.Type {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			pdb.Status.Conditions[i] = cond
			return
		}
	}
	pdb.Status.Conditions = append(pdb.Status.Conditions, cond)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
