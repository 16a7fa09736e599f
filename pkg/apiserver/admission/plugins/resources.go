package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podRequests is upstream's resourcehelper.PodRequests (component-helpers) without pod-level
// resources and in-place resize: the sum of the containers' requests and of the restartable
// (sidecar) init containers', or the largest init container (plus the sidecars started before
// it) if that is more, plus the pod's overhead.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	addResources(reqs, pod.Spec.Overhead)
	return reqs
}

// podLimits is upstream's resourcehelper.PodLimits likewise: overhead is added only to the
// limits that are set.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	lims := aggregateContainers(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for name, q := range pod.Spec.Overhead {
		if v, ok := lims[name]; ok {
			v.Add(q)
			lims[name] = v
		}
	}
	return lims
}

func aggregateContainers(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addResources(out, of(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	inits := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var this corev1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(out, of(c))
			addResources(sidecars, of(c))
			this = sidecars
		} else {
			this = corev1.ResourceList{}
			addResources(this, of(c))
			addResources(this, sidecars)
		}
		maxResources(inits, this)
	}
	maxResources(out, inits)
	return out
}

func addResources(into, l corev1.ResourceList) {
	for k, v := range l {
		if cur, ok := into[k]; ok {
			cur.Add(v)
			into[k] = cur
		} else {
			into[k] = v.DeepCopy()
		}
	}
}

func maxResources(into, l corev1.ResourceList) {
	for k, v := range l {
		if cur, ok := into[k]; !ok || v.Cmp(cur) > 0 {
			into[k] = v.DeepCopy()
		}
	}
}

// Resource list arithmetic, as upstream's k8s.io/apiserver/pkg/quota/v1 helpers.

func quotaAdd(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		q := v.DeepCopy()
		if o, ok := b[k]; ok {
			q.Add(o)
		}
		out[k] = q
	}
	for k, v := range b {
		if _, ok := out[k]; !ok {
			out[k] = v.DeepCopy()
		}
	}
	return out
}

// quotaSubtractNonNegative is a - b, floored at zero, over a's names.
func quotaSubtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	zero := resource.MustParse("0")
	out := corev1.ResourceList{}
	for k, v := range a {
		q := v.DeepCopy()
		if o, ok := b[k]; ok {
			q.Sub(o)
		}
		if q.Cmp(zero) <= 0 {
			q = zero.DeepCopy()
		}
		out[k] = q
	}
	for k := range b {
		if _, ok := out[k]; !ok {
			out[k] = zero.DeepCopy()
		}
	}
	return out
}

// quotaMask is a restricted to names.
func quotaMask(a corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if v, ok := a[n]; ok {
			out[n] = v.DeepCopy()
		}
	}
	return out
}

func quotaNames(a corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(a))
	for k := range a {
		out = append(out, k)
	}
	return out
}

func quotaRemoveZeros(a corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// quotaLessThanOrEqual reports whether every named value of a is at most b's, and which are not.
func quotaLessThanOrEqual(a, b corev1.ResourceList) (bool, []corev1.ResourceName) {
	var over []corev1.ResourceName
	for k, v := range a {
		if lim, ok := b[k]; ok && v.Cmp(lim) > 0 {
			over = append(over, k)
		}
	}
	return len(over) == 0, over
}

func quotaEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		o, ok := b[k]
		if !ok || v.Cmp(o) != 0 {
			return false
		}
	}
	return true
}
