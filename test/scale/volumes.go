package main

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objRef is a Secret or ConfigMap (Resource "secrets" or "configmaps") a pod mounts.
type objRef struct{ Resource, Namespace, Name string }

// podRefs are the Secrets and ConfigMaps pod mounts, deduplicated: its secret and
// configMap volumes and its projected volumes' secret and configMap sources (the
// ServiceAccount token volume's kube-root-ca.crt among them), as a kubelet's Secret and
// ConfigMap managers register them.
func podRefs(p *corev1.Pod) []objRef {
	seen := map[objRef]bool{}
	out := []objRef{} // not nil: a pod without references is still on the node
	add := func(resource, name string) {
		r := objRef{Resource: resource, Namespace: p.Namespace, Name: name}
		if name != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add("secrets", s.Secret.Name)
				}
				if s.ConfigMap != nil {
					add("configmaps", s.ConfigMap.Name)
				}
			}
		}
	}
	return out
}

// volumeRefs counts, per Secret or ConfigMap, the pods on one node that mount it: a
// kubelet watches an object while its count is above zero.
type volumeRefs struct {
	pods  map[types.UID][]objRef
	count map[objRef]int
}

func newVolumeRefs() *volumeRefs {
	return &volumeRefs{pods: map[types.UID][]objRef{}, count: map[objRef]int{}}
}

// update sets the references of the pods in changes (nil: the pod is gone); with replace,
// changes are all the node's pods (a list) and every other pod is gone. It returns the
// objects no pod referenced before and some pod references now (start their watches),
// and those some pod referenced before and none does now (stop them), each sorted.
func (v *volumeRefs) update(changes map[types.UID][]objRef, replace bool) (start, stop []objRef) {
	before := maps.Clone(v.count)
	if replace {
		for uid := range v.pods {
			if _, ok := changes[uid]; !ok {
				v.set(uid, nil)
			}
		}
	}
	for uid, refs := range changes {
		v.set(uid, refs)
	}
	for r := range v.count {
		if before[r] == 0 {
			start = append(start, r)
		}
	}
	for r := range before {
		if v.count[r] == 0 {
			stop = append(stop, r)
		}
	}
	return sortRefs(start), sortRefs(stop)
}

// set replaces uid's references (nil: forgets the pod).
func (v *volumeRefs) set(uid types.UID, refs []objRef) {
	for _, r := range refs {
		v.count[r]++
	}
	for _, r := range v.pods[uid] {
		if v.count[r]--; v.count[r] == 0 {
			delete(v.count, r)
		}
	}
	if refs == nil {
		delete(v.pods, uid)
		return
	}
	v.pods[uid] = refs
}

func sortRefs(refs []objRef) []objRef {
	slices.SortFunc(refs, func(a, b objRef) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return refs
}
