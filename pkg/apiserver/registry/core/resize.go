package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mergeResize is pods/{name}/resize (in-place resize, as upstream 1.37 without pod-level
// resources): only the containers' and init containers' resources and resizePolicy come from
// the request; of the resources only cpu and memory may change, and the pod's QoS class may
// not.
func mergeResize(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	pod, req := current.(*corev1.Pod), request.(*corev1.Pod)
	spec := field.NewPath("spec")
	if r := pod.Spec.Resources; r != nil && len(r.Requests)+len(r.Limits) > 0 {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "pods with pod-level resources cannot be resized")}, nil
	}
	if _, static := pod.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}, nil
	}
	var errs field.ErrorList
	if len(req.Spec.Containers) != len(pod.Spec.Containers) {
		errs = append(errs, field.Forbidden(spec.Child("containers"), "containers may not be added or removed on resize"))
	}
	if len(req.Spec.InitContainers) != len(pod.Spec.InitContainers) {
		errs = append(errs, field.Forbidden(spec.Child("initContainers"), "initContainers may not be added or removed on resize"))
	}
	if len(errs) > 0 {
		return nil, errs, nil
	}
	oldQOS := podQOS(&pod.Spec)
	errs = append(errs, resizeContainers(spec, "containers", pod.Spec.Containers, req.Spec.Containers)...)
	errs = append(errs, resizeContainers(spec, "initContainers", pod.Spec.InitContainers, req.Spec.InitContainers)...)
	if newQOS := podQOS(&pod.Spec); newQOS != oldQOS {
		errs = append(errs, field.Invalid(spec, newQOS, "Pod QOS Class may not change as a result of resizing"))
	}
	return pod, errs, nil
}

// resizeContainers takes each container's resources and resizePolicy from the request
// (list is "containers" or "initContainers"), with upstream's errors for anything but cpu
// and memory changed, and for resizing a non-sidecar init container restarted on resize.
func resizeContainers(spec *field.Path, list string, cur, req []corev1.Container) field.ErrorList {
	var errs field.ErrorList
	for i := range cur {
		c, rc := &cur[i], &req[i]
		path := spec.Child(list).Index(i)
		if rc.Name != c.Name {
			errs = append(errs, field.Forbidden(path.Child("name"), list+" may not be renamed or reordered on resize"))
			continue
		}
		if !registry.SemanticEqual(otherThanCPUMemory(rc.Resources.Requests), otherThanCPUMemory(c.Resources.Requests)) ||
			!registry.SemanticEqual(otherThanCPUMemory(rc.Resources.Limits), otherThanCPUMemory(c.Resources.Limits)) {
			if list == "containers" {
				errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
			} else {
				errs = append(errs, field.Forbidden(path, "only cpu and memory resources for init or sidecar containers are mutable"))
			}
		}
		rp := path.Child("resources")
		errs = append(errs, registry.ValidateResourceList(rc.Resources.Requests, rp.Child("requests"))...)
		errs = append(errs, registry.ValidateResourceList(rc.Resources.Limits, rp.Child("limits"))...)
		for name, req := range rc.Resources.Requests {
			if lim, ok := rc.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), req.String(), "must be less than or equal to "+string(name)+" limit of "+lim.String()))
			}
		}
		policy := c.ResizePolicy
		if rc.ResizePolicy != nil {
			policy = rc.ResizePolicy
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if list == "initContainers" && !sidecar && !registry.SemanticEqual(rc.Resources, c.Resources) {
			for _, p := range policy {
				if p.RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Forbidden(path, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
				}
			}
		}
		c.Resources, c.ResizePolicy = rc.Resources, policy
	}
	return errs
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
