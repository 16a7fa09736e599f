package core

import (
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mergeEphemeralContainers is pods/{name}/ephemeralcontainers (what `kubectl debug` writes):
// only spec.ephemeralContainers comes from the request, and existing ones may be neither
// removed nor changed.
func mergeEphemeralContainers(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	pod, req := current.(*corev1.Pod), request.(*corev1.Pod)
	p := field.NewPath("spec", "ephemeralContainers")
	if _, static := pod.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return nil, field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}, nil
	}
	var errs field.ErrorList
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range req.Spec.EphemeralContainers {
		byName[req.Spec.EphemeralContainers[i].Name] = &req.Spec.EphemeralContainers[i]
	}
	for _, old := range pod.Spec.EphemeralContainers {
		if c, ok := byName[old.Name]; !ok {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		} else if !registry.SemanticEqual(old, *c) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be changed\n", old.Name)))
		}
	}
	names := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		names[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		names[c.Name] = true
	}
	for i := range req.Spec.EphemeralContainers {
		c := &req.Spec.EphemeralContainers[i]
		cp := p.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			errs = append(errs, registry.ValidateMessages(c.Name, utilvalidation.IsDNS1123Label(c.Name), cp.Child("name"))...)
			if names[c.Name] {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names[c.Name] = true
		}
		if c.Image == "" {
			errs = append(errs, field.Required(cp.Child("image"), ""))
		}
		if len(c.Ports) > 0 {
			errs = append(errs, field.Forbidden(cp.Child("ports"), "cannot be set for an Ephemeral Container"))
		}
		if c.Resources.Limits != nil || c.Resources.Requests != nil {
			errs = append(errs, field.Forbidden(cp.Child("resources"), "cannot be set for an Ephemeral Container"))
		}
		// The defaults a pod's containers get.
		if c.TerminationMessagePath == "" {
			c.TerminationMessagePath = corev1.TerminationMessagePathDefault
		}
		if c.TerminationMessagePolicy == "" {
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		}
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullIfNotPresent
			if t := imageTag(c.Image); t == "" || t == "latest" {
				c.ImagePullPolicy = corev1.PullAlways
			}
		}
	}
	pod.Spec.EphemeralContainers = req.Spec.EphemeralContainers
	return pod, errs, nil
}
