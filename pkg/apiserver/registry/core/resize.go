package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mergeResize is pods/{name}/resize: upstream 1.37's resize strategy and ValidatePodResize
// with its default gates (InPlacePodVerticalScalingInitContainers GA,
// InPlacePodLevelResourcesVerticalScaling beta and on, memory-backed volumes off). Only the
// containers' and init containers' resources and resizePolicy and the pod-level resources come
// from the request; of those only cpu and memory may change, none may be removed, and the
// pod's QoS class may not change. Static and Windows pods are not resized.
func mergeResize(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	pod, req := current.(*corev1.Pod), request.(*corev1.Pod)
	if _, static := pod.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}, nil
	}
	if pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}, nil
	}
	spec := field.NewPath("spec")
	if errs := resizeOrdering(spec, &pod.Spec, &req.Spec); len(errs) > 0 {
		return nil, errs, nil
	}
	old := pod.Spec.DeepCopy()
	defaultRequestsFromLimits(req.Spec.Containers) // SetDefaults_Pod on the request
	defaultRequestsFromLimits(req.Spec.InitContainers)
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Resources, pod.Spec.Containers[i].ResizePolicy = req.Spec.Containers[i].Resources, req.Spec.Containers[i].ResizePolicy
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Resources, pod.Spec.InitContainers[i].ResizePolicy = req.Spec.InitContainers[i].Resources, req.Spec.InitContainers[i].ResizePolicy
	}
	if req.Spec.Resources != nil || old.Resources == nil { // PodLevelResourcesFixDefaulting keeps a dropped one
		pod.Spec.Resources = req.Spec.Resources
	}
	if pod.Spec.Resources != nil {
		pod.Spec.Resources = pod.Spec.Resources.DeepCopy()
		defaultPodLevelResources(&pod.Spec)
	}
	errs := validatePodSpec(&pod.Spec, spec, podSpecOptions{resourceIsPod: true})
	if len(initRestartContainerErrs(old.InitContainers, spec.Child("initContainers"))) == 0 {
		errs = append(errs, initRestartContainerErrs(pod.Spec.InitContainers, spec.Child("initContainers"))...)
	}
	oldQOS := pod.Status.QOSClass
	if oldQOS == "" {
		oldQOS = podQOS(old)
	}
	if podQOS(&pod.Spec) != oldQOS {
		errs = append(errs, field.Invalid(spec, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(pod) {
		errs = append(errs, field.Forbidden(spec, "Pod running on node without support for resize"))
	}
	if podLevelSet(old) || podLevelSet(&pod.Spec) {
		errs = append(errs, resizePodLevel(spec, pod.Spec.Resources, old.Resources)...)
	}
	errs = append(errs, resizeContainers(spec, "containers", old.Containers, pod.Spec.Containers)...)
	errs = append(errs, resizeContainers(spec, "initContainers", old.InitContainers, pod.Spec.InitContainers)...)
	return pod, errs, nil
}

// resizeOrdering is upstream's validatePodResizeContainerOrdering: containers and init
// containers may not be added, removed, renamed or reordered.
func resizeOrdering(spec *field.Path, cur, req *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name     string
		cur, req []corev1.Container
	}{{"containers", cur.Containers, req.Containers}, {"initContainers", cur.InitContainers, req.InitContainers}} {
		if len(l.cur) != len(l.req) {
			errs = append(errs, field.Forbidden(spec.Child(l.name), l.name+" may not be added or removed on resize"))
			continue
		}
		for i := range l.cur {
			if l.cur[i].Name != l.req[i].Name {
				errs = append(errs, field.Forbidden(spec.Child(l.name).Index(i).Child("name"), l.name+" may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// resizeSupported is upstream's isPodResizeRequestSupported: a pod whose first running
// container reports no resources runs on a node that cannot resize.
func resizeSupported(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func podLevelSet(spec *corev1.PodSpec) bool {
	return spec.Resources != nil && len(spec.Resources.Requests)+len(spec.Resources.Limits) > 0
}

// resizePodLevel is upstream's validatePodLevelResourcesResize (without DRA): pod-level
// resources, their requests and limits may not be removed, and only cpu and memory change.
func resizePodLevel(spec *field.Path, cur, old *corev1.ResourceRequirements) field.ErrorList {
	rp := spec.Child("resources")
	if old != nil && cur == nil {
		return field.ErrorList{field.Forbidden(rp, "pod-level resources cannot be removed")}
	}
	var errs field.ErrorList
	if old != nil {
		if resourcesRemoved(cur.Requests, old.Requests) {
			errs = append(errs, field.Forbidden(rp.Child("requests"), "pod-level resource requests cannot be removed"))
		}
		if resourcesRemoved(cur.Limits, old.Limits) {
			errs = append(errs, field.Forbidden(rp.Child("limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if cur != nil {
		var oldReq, oldLim corev1.ResourceList
		if old != nil {
			oldReq, oldLim = old.Requests, old.Limits
		}
		masked := &corev1.ResourceRequirements{Requests: withOldCPUMemory(cur.Requests, oldReq),
			Limits: withOldCPUMemory(cur.Limits, oldLim), Claims: cur.Claims}
		if old == nil && len(masked.Requests)+len(masked.Limits)+len(masked.Claims) == 0 {
			masked = nil
		}
		if !registry.SemanticEqual(masked, old) {
			errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable at pod-level"))
		}
	}
	return errs
}

// resizeContainers checks each container of list ("containers" or "initContainers") as
// upstream's ValidatePodResize: no request or limit removed, nothing but cpu and memory
// changed, and no non-sidecar init container restarted on resize resized.
func resizeContainers(spec *field.Path, list string, old, cur []corev1.Container) field.ErrorList {
	var errs field.ErrorList
	for i := range old {
		o, c := &old[i], &cur[i]
		path := spec.Child(list).Index(i)
		rp := path.Child("resources")
		if resourcesRemoved(c.Resources.Requests, o.Resources.Requests) {
			errs = append(errs, field.Forbidden(rp.Child("requests"), "resource requests cannot be removed"))
		}
		if resourcesRemoved(c.Resources.Limits, o.Resources.Limits) {
			errs = append(errs, field.Forbidden(rp.Child("limits"), "resource limits cannot be removed"))
		}
	}
	for i := range old {
		o, c := &old[i], &cur[i]
		path := spec.Child(list).Index(i)
		masked := c.DeepCopy()
		masked.Resources = corev1.ResourceRequirements{Requests: withOldCPUMemory(c.Resources.Requests, o.Resources.Requests),
			Limits: withOldCPUMemory(c.Resources.Limits, o.Resources.Limits), Claims: c.Resources.Claims}
		if list == "containers" {
			if !registry.SemanticEqual(masked, o) {
				errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
			}
			continue
		}
		if !registry.SemanticEqual(masked, o) {
			errs = append(errs, field.Forbidden(path, "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		sidecar := o.RestartPolicy != nil && *o.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if !sidecar && !registry.SemanticEqual(c, o) {
			for _, p := range c.ResizePolicy {
				if p.RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Forbidden(path, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
				}
			}
		}
	}
	return errs
}

// initRestartContainerErrs is upstream's refusal of a RestartContainer resize policy on a
// non-sidecar init container (allowed only where the stored spec already has one).
func initRestartContainerErrs(cs []corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			continue
		}
		for j, rp := range c.ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				errs = append(errs, field.Invalid(p.Index(i).Child("resizePolicy").Index(j).Child("restartPolicy"), rp.RestartPolicy, "must not be set to 'RestartContainer' for non-sidecar initContainers"))
			}
		}
	}
	return errs
}

// resourcesRemoved: a resource of old is missing from l.
func resourcesRemoved(l, old corev1.ResourceList) bool {
	if len(old) > len(l) {
		return true
	}
	for name := range old {
		if _, ok := l[name]; !ok {
			return true
		}
	}
	return false
}

// withOldCPUMemory is upstream's dropCPUMemoryUpdates: l with its cpu and memory those of old.
func withOldCPUMemory(l, old corev1.ResourceList) corev1.ResourceList {
	if l == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range l {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
			out[k] = v
		}
	}
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if v, ok := old[k]; ok {
			out[k] = v
		}
	}
	return out
}

// podQOS is upstream's qos.ComputePodQOS: from the pod-level resources when they are set,
// else from every container's, each BestEffort, Guaranteed or Burstable by cpu and memory.
func podQOS(spec *corev1.PodSpec) corev1.PodQOSClass {
	if podLevelSet(spec) {
		return requirementsQOS(spec.Resources)
	}
	var q corev1.PodQOSClass
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			switch cq := requirementsQOS(&cs[i].Resources); {
			case cq == corev1.PodQOSBurstable:
				return cq
			case q == "":
				q = cq
			case q != cq:
				return corev1.PodQOSBurstable
			}
		}
	}
	if q == "" {
		return corev1.PodQOSBestEffort
	}
	return q
}

// requirementsQOS is the QoS shape of one set of requirements: Burstable when a cpu or memory
// request differs from its limit, BestEffort when both are zero, Guaranteed when both are not.
func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var q corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		rq := corev1.PodQOSGuaranteed
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			rq = corev1.PodQOSBestEffort
		}
		if q == "" {
			q = rq
		} else if q != rq {
			return corev1.PodQOSBurstable
		}
	}
	return q
}
