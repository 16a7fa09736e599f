package plugins

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// limitRangerAnnotation records what LimitRanger defaulted, as upstream.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanger is upstream's LimitRanger plugin: a new pod's containers get the default
// requests and limits of their namespace's LimitRanges (type Container); containers (type
// Container), the pod as a whole (type Pod: its containers' sum, or its largest init
// container) and persistent volume claims' storage requests (type PersistentVolumeClaim)
// outside their min, max or maxLimitRequestRatio are refused with upstream's messages.
type LimitRanger struct {
	admission.Operations
	ranges *informer.Informer[*corev1.LimitRange]
}

// NewLimitRanger reads LimitRanges from the shared informers.
func NewLimitRanger(f *informer.Factory) *LimitRanger {
	return &LimitRanger{Operations: admission.Operations{admission.Create, admission.Update}, ranges: informer.For[*corev1.LimitRange](f, schema.GroupResource{Resource: "limitranges"})}
}

// Start waits until the LimitRange informer holds its first list.
func (l *LimitRanger) Start(ctx context.Context) { _ = l.ranges.WaitForSync(ctx) }

// rangesOf are the namespace's LimitRanges in name order (the order defaults apply in).
func (l *LimitRanger) rangesOf(ns string) []*corev1.LimitRange {
	rs := l.ranges.List(ns)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs
}

// limitRangerApplies is upstream's SupportsAttributes: pods on create (and their resize),
// persistent volume claims on create and update, and no object being deleted.
func limitRangerApplies(a *admission.Attributes) bool {
	if a.Resource.Group != "" {
		return false
	}
	if old, ok := a.OldObject.(interface{ GetDeletionTimestamp() *metav1.Time }); ok && a.OldObject != nil && old.GetDeletionTimestamp() != nil {
		return false
	}
	switch a.Resource.Resource {
	case "pods":
		return (a.Subresource == "" && a.Operation == admission.Create) || (a.Subresource == "resize" && a.Operation == admission.Update)
	case "persistentvolumeclaims":
		return a.Subresource == ""
	}
	return false
}

// Admit fills the containers' default requests and limits.
func (l *LimitRanger) Admit(_ context.Context, a *admission.Attributes) error {
	if !limitRangerApplies(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	for _, lr := range l.rangesOf(a.Namespace) {
		var def corev1.ResourceRequirements
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for k, v := range item.DefaultRequest {
				if def.Requests == nil {
					def.Requests = corev1.ResourceList{}
				}
				def.Requests[k] = v.DeepCopy()
			}
			for k, v := range item.Default {
				if def.Limits == nil {
					def.Limits = corev1.ResourceList{}
				}
				def.Limits[k] = v.DeepCopy()
			}
		}
		if def.Requests == nil && def.Limits == nil {
			continue
		}
		var notes []string
		for i := range pod.Spec.InitContainers {
			notes = append(notes, mergeResources(&pod.Spec.InitContainers[i], def)...)
		}
		for i := range pod.Spec.Containers {
			notes = append(notes, mergeResources(&pod.Spec.Containers[i], def)...)
		}
		if len(notes) > 0 {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
	return nil
}

// mergeResources sets what the container does not set itself; it returns upstream's notes.
func mergeResources(c *corev1.Container, def corev1.ResourceRequirements) []string {
	var setReq, setLim []string
	for k, v := range def.Limits {
		if _, ok := c.Resources.Limits[k]; !ok {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[k] = v.DeepCopy()
			setLim = append(setLim, string(k))
		}
	}
	for k, v := range def.Requests {
		if _, ok := c.Resources.Requests[k]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[k] = v.DeepCopy()
			setReq = append(setReq, string(k))
		}
	}
	sort.Strings(setReq)
	sort.Strings(setLim)
	var notes []string
	if len(setReq) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setReq, ", "), "container", c.Name))
	}
	if len(setLim) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLim, ", "), "container", c.Name))
	}
	return notes
}

// Validate refuses containers, pods and claims outside their LimitRanges.
func (l *LimitRanger) Validate(_ context.Context, a *admission.Attributes) error {
	if !limitRangerApplies(a) {
		return nil
	}
	var errs []error
	switch obj := a.Object.(type) {
	case *corev1.Pod:
		for _, lr := range l.rangesOf(a.Namespace) {
			errs = append(errs, validatePodLimits(lr, obj)...)
		}
	case *corev1.PersistentVolumeClaim:
		for _, lr := range l.rangesOf(a.Namespace) {
			errs = append(errs, validateClaimLimits(lr, obj)...)
		}
	}
	if len(errs) > 0 {
		return admission.NewForbidden(a, utilerrors.NewAggregate(errs))
	}
	return nil
}

// validatePodLimits is upstream's PodValidateLimitFunc (names in order, where upstream's
// map order is random).
func validatePodLimits(lr *corev1.LimitRange, pod *corev1.Pod) []error {
	var errs []error
	check := func(item corev1.LimitRangeItem, request, limit corev1.ResourceList) {
		t := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			if err := minConstraint(t, string(k), item.Min[k], request, limit); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.Max) {
			if err := maxConstraint(t, string(k), item.Max[k], request, limit); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.MaxLimitRequestRatio) {
			if err := limitRequestRatioConstraint(t, string(k), item.MaxLimitRequestRatio[k], request, limit); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for _, c := range cs {
					check(item, c.Resources.Requests, c.Resources.Limits)
				}
			}
		case corev1.LimitTypePod:
			// Upstream's limitranger sums without the pod's overhead.
			reqs := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
			lims := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
			check(item, reqs, lims)
		}
	}
	return errs
}

// validateClaimLimits is upstream's PersistentVolumeClaimValidateLimitFunc: min and max
// against the claim's requests (its limits are not user input).
func validateClaimLimits(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) []error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		t := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			if err := minConstraint(t, string(k), item.Min[k], pvc.Spec.Resources.Requests, corev1.ResourceList{}); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.Max) {
			req, ok := pvc.Spec.Resources.Requests[k]
			mx := item.Max[k]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", k, t, mx.String()))
			case req.Cmp(mx) > 0:
				errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but request is %s", k, t, mx.String(), req.String()))
			}
		}
	}
	return errs
}

// limitRequestRatioConstraint is upstream's: limit/request at most the ratio, both required
// and non-zero.
func limitRequestRatioConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqExists := request[corev1.ResourceName(name)]
	lim, limExists := limit[corev1.ResourceName(name)]
	reqV, limV := req.Value(), lim.Value()
	if reqV <= resource.MaxMilliValue && limV <= resource.MaxMilliValue && enforced.Value() <= resource.MaxMilliValue {
		reqV, limV = req.MilliValue(), lim.MilliValue()
	}
	if !reqExists || reqV == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !limExists || limV == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	observed := float64(limV) / float64(reqV)
	display := observed
	maxRatio := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		maxRatio = float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), display)
	}
	return nil
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// minConstraint is upstream's: a request is required and, like a limit, at least the minimum.
func minConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqExists := request[corev1.ResourceName(name)]
	lim, limExists := limit[corev1.ResourceName(name)]
	if !reqExists {
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if req.Cmp(enforced) < 0 {
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	if limExists && lim.Cmp(enforced) < 0 {
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

// maxConstraint is upstream's: a limit is required and, like a request, at most the maximum.
func maxConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqExists := request[corev1.ResourceName(name)]
	lim, limExists := limit[corev1.ResourceName(name)]
	if !limExists {
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	}
	if lim.Cmp(enforced) > 0 {
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	if reqExists && req.Cmp(enforced) > 0 {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}
