package plugins

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// limitRangerAnnotation records what LimitRanger defaulted, as upstream.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanger is upstream's LimitRanger plugin for containers: a new pod's containers get
// the default requests and limits of their namespace's LimitRanges (type Container), and
// a container outside their min and max is refused with upstream's messages. (Type Pod and
// PersistentVolumeClaim limits and maxLimitRequestRatio are not enforced.)
type LimitRanger struct {
	admission.Operations
	ranges *admission.Cache[*corev1.LimitRange]
}

// NewLimitRanger reads LimitRanges from src.
func NewLimitRanger(src admission.Source) *LimitRanger {
	return &LimitRanger{Operations: admission.Operations{admission.Create}, ranges: admission.NewCache[*corev1.LimitRange](src, nil)}
}

// Start fills the LimitRange cache.
func (l *LimitRanger) Start(ctx context.Context) { l.ranges.Start(ctx) }

// rangesOf are the namespace's LimitRanges in name order (the order defaults apply in).
func (l *LimitRanger) rangesOf(ns string) []*corev1.LimitRange {
	rs := l.ranges.List(ns)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs
}

// Admit fills the containers' default requests and limits.
func (l *LimitRanger) Admit(_ context.Context, a *admission.Attributes) error {
	if !isPod(a) {
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

// Validate refuses containers outside their LimitRanges' min and max.
func (l *LimitRanger) Validate(_ context.Context, a *admission.Attributes) error {
	if !isPod(a) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	var errs []error
	for _, lr := range l.rangesOf(a.Namespace) {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for _, c := range cs {
					for _, k := range sortedNames(item.Min) {
						if err := minConstraint(string(corev1.LimitTypeContainer), string(k), item.Min[k], c.Resources.Requests, c.Resources.Limits); err != nil {
							errs = append(errs, err)
						}
					}
					for _, k := range sortedNames(item.Max) {
						if err := maxConstraint(string(corev1.LimitTypeContainer), string(k), item.Max[k], c.Resources.Requests, c.Resources.Limits); err != nil {
							errs = append(errs, err)
						}
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return admission.NewForbidden(a, utilerrors.NewAggregate(errs))
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
