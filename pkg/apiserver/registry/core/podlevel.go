package core

import (
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Pod-level resources (spec.resources; PodLevelResources is GA and
// PodLevelResourcesFixDefaulting beta and on in 1.37): upstream's validatePodResources and
// DefaultPodLevelResources.

// validatePodResources is upstream's validatePodResources: not on Windows, no claims, valid
// names (cpu, memory, hugepages) and quantities, requests not below the containers'
// aggregate, container limits not above the pod's.
func validatePodResources(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	if spec.Resources == nil {
		return nil
	}
	rp := p.Child("resources")
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(rp, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	if spec.Resources.Claims != nil {
		errs = append(errs, field.Forbidden(rp.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	errs = append(errs, validateRequirements(spec.Resources, rp, validatePodResourceName)...)
	return append(errs, validatePodResourceConsistency(spec, rp)...)
}

func validatePodResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	v := string(name)
	errs := registry.ValidateQualifiedName(v, p)
	if len(errs) == 0 && !strings.Contains(v, "/") && !standardResourceNames.Has(v) && !isHugePageResourceName(name) &&
		!strings.HasPrefix(v, "requests.hugepages-") {
		errs = append(errs, field.Invalid(p, stringer(name), "must be a standard resource type or fully qualified"))
	}
	if len(errs) == 0 && !resourcehelper.IsSupportedPodLevelResource(name) {
		errs = append(errs, field.NotSupported(p, name, sets.List(resourcehelper.SupportedPodLevelResources())))
	}
	return errs
}

// validatePodResourceConsistency: pod-level requests cover the containers' aggregate
// requests, hugepage limits their aggregate limits, and each container's limit is within the
// pod's.
func validatePodResourceConsistency(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	pod := &corev1.Pod{Spec: *spec}
	for name, ctr := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if req, ok := spec.Resources.Requests[name]; ok && ctr.Cmp(req) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", ctr.String())))
		}
	}
	for name, ctr := range resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{}) {
		if !isHugePageResourceName(name) {
			continue
		}
		if lim, ok := spec.Resources.Limits[name]; ok && ctr.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(p.Child("limits").Key(string(name)), lim.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", ctr.String())))
		}
	}
	for i, c := range spec.Containers {
		for name, cl := range c.Resources.Limits {
			if lim, ok := spec.Resources.Limits[name]; ok && cl.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(p.Child("containers").Index(i).Key(string(name)).Child("limits"), cl.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", lim.String())))
			}
		}
	}
	return errs
}

// defaultPodLevelResources is upstream's DefaultPodLevelResources, on a pod whose
// pod-level resources are set: hugepage limits from the containers' aggregate, requests from
// the containers' aggregate (overcommittable resources) and from the pod's limits, then
// limits as the larger of the pod's request and the containers' aggregate limit where every
// container limits that resource.
func defaultPodLevelResources(spec *corev1.PodSpec) {
	r := spec.Resources
	if r == nil || len(r.Requests)+len(r.Limits) == 0 {
		return
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: spec.Containers, InitContainers: spec.InitContainers}}
	aggLim := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
	for name, q := range aggLim {
		if !resourcehelper.IsSupportedPodLevelResource(name) || !isHugePageResourceName(name) {
			continue
		}
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if _, ok := r.Limits[name]; !ok {
			r.Limits = setQuantity(r.Limits, name, q)
		}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if _, ok := r.Requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && isOvercommitAllowed(name) {
			r.Requests = setQuantity(r.Requests, name, q)
		}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			r.Requests = setQuantity(r.Requests, name, q.DeepCopy())
		}
	}
	for name, req := range r.Requests {
		if _, ok := r.Limits[name]; ok || !resourcehelper.IsSupportedPodLevelResource(name) || !allLimit(spec, name) {
			continue
		}
		if lim, ok := aggLim[name]; ok {
			if req.Cmp(lim) > 0 {
				lim = req
			}
			r.Limits = setQuantity(r.Limits, name, lim)
		}
	}
}

func setQuantity(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	l[name] = q
	return l
}

// allLimit: every container and init container limits name.
func allLimit(spec *corev1.PodSpec, name corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if _, ok := c.Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}
