package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mergeResize is pods/{name}/resize (in-place resize, as upstream 1.33): only the containers'
// resources and resizePolicy come from the request; of the resources only cpu and memory may
// change, and the pod's QoS class may not.
func mergeResize(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	pod, req := current.(*corev1.Pod), request.(*corev1.Pod)
	spec := field.NewPath("spec")
	if r := pod.Spec.Resources; r != nil && len(r.Requests)+len(r.Limits) > 0 {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "pods with pod-level resources cannot be resized")}, nil
	}
	if _, static := pod.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}, nil
	}
	if len(req.Spec.Containers) != len(pod.Spec.Containers) {
		return nil, field.ErrorList{field.Forbidden(spec.Child("containers"), "containers may not be added or removed on resize")}, nil
	}
	var errs field.ErrorList
	oldQOS := podQOS(&pod.Spec)
	for i := range pod.Spec.Containers {
		c, rc := &pod.Spec.Containers[i], &req.Spec.Containers[i]
		if rc.Name != c.Name {
			errs = append(errs, field.Forbidden(spec.Child("containers").Index(i).Child("name"), "containers may not be renamed or reordered on resize"))
			continue
		}
		if !registry.SemanticEqual(otherThanCPUMemory(rc.Resources.Requests), otherThanCPUMemory(c.Resources.Requests)) ||
			!registry.SemanticEqual(otherThanCPUMemory(rc.Resources.Limits), otherThanCPUMemory(c.Resources.Limits)) {
			errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
		}
		rp := spec.Child("containers").Index(i).Child("resources")
		errs = append(errs, registry.ValidateResourceList(rc.Resources.Requests, rp.Child("requests"))...)
		errs = append(errs, registry.ValidateResourceList(rc.Resources.Limits, rp.Child("limits"))...)
		for name, req := range rc.Resources.Requests {
			if lim, ok := rc.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), req.String(), "must be less than or equal to "+string(name)+" limit of "+lim.String()))
			}
		}
		c.Resources = rc.Resources
		if rc.ResizePolicy != nil {
			c.ResizePolicy = rc.ResizePolicy
		}
	}
	if newQOS := podQOS(&pod.Spec); newQOS != oldQOS {
		errs = append(errs, field.Invalid(spec, newQOS, "Pod QOS Class may not change as a result of resizing"))
	}
	return pod, errs, nil
}

func otherThanCPUMemory(l corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range l {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
			out[k] = v
		}
	}
	return out
}

// podQOS is upstream's QoS class of a pod's containers (qos.ComputePodQOS without
// pod-level resources): BestEffort without any cpu/memory request or limit, Guaranteed when
// every container limits both and requests equal limits, Burstable otherwise.
func podQOS(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[r]
				lim, hasLim := c.Resources.Limits[r]
				if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
					any = true
				}
				if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
