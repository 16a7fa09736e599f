package core

import (
	"reflect"

	"github.com/hacp/hacp/pkg/apiserver/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultPodSpec fills what upstream's generated defaulters fill in every pod spec, whether
// of a pod or of a template (SetDefaults_PodSpec, _Container, _Probe, _Volume, ports,
// fieldRef, resource lists): pod-only defaults (enableServiceLinks) are the pod kind's own.
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	// v1's deprecated serviceAccount mirrors serviceAccountName (upstream's conversion).
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			defaultContainer(&cs[i])
		}
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
	defaultResourceList(spec.Overhead)
	if spec.Resources != nil {
		defaultResourceList(spec.Resources.Limits)
		defaultResourceList(spec.Resources.Requests)
	}
}

func defaultContainer(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if imageTag(c.Image) == "" || imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	for j := range c.Ports {
		if c.Ports[j].Protocol == "" {
			c.Ports[j].Protocol = corev1.ProtocolTCP
		}
	}
	for j := range c.Env {
		if vf := c.Env[j].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	defaultResourceList(c.Resources.Limits)
	defaultResourceList(c.Resources.Requests)
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		if pr.TimeoutSeconds == 0 {
			pr.TimeoutSeconds = 1
		}
		if pr.PeriodSeconds == 0 {
			pr.PeriodSeconds = 10
		}
		if pr.SuccessThreshold == 0 {
			pr.SuccessThreshold = 1
		}
		if pr.FailureThreshold == 0 {
			pr.FailureThreshold = 3
		}
		defaultHTTPGet(pr.HTTPGet)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// defaultResourceList rounds quantities up to milli-units, as upstream's SetDefaults_ResourceList.
func defaultResourceList(l corev1.ResourceList) {
	for k, v := range l {
		v.RoundUp(resource.Milli)
		l[k] = v
	}
}

func defaultVolume(v *corev1.Volume) {
	vs := &v.VolumeSource
	if reflect.ValueOf(*vs).IsZero() {
		vs.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := func(m **int32, def int32) {
		if *m == nil {
			*m = &def
		}
	}
	switch {
	case vs.Secret != nil:
		mode(&vs.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	case vs.ConfigMap != nil:
		mode(&vs.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	case vs.DownwardAPI != nil:
		mode(&vs.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range vs.DownwardAPI.Items {
			if f := vs.DownwardAPI.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	case vs.Projected != nil:
		mode(&vs.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range vs.Projected.Sources {
			src := &vs.Projected.Sources[i]
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				src.ServiceAccountToken.ExpirationSeconds = &hour
			}
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					if f := src.DownwardAPI.Items[j].FieldRef; f != nil && f.APIVersion == "" {
						f.APIVersion = "v1"
					}
				}
			}
		}
	case vs.HostPath != nil:
		if vs.HostPath.Type == nil {
			t := corev1.HostPathUnset
			vs.HostPath.Type = &t
		}
	case vs.Ephemeral != nil && vs.Ephemeral.VolumeClaimTemplate != nil:
		DefaultPVCSpec(&vs.Ephemeral.VolumeClaimTemplate.Spec)
	}
}

// DefaultPVCSpec is upstream's SetDefaults_PersistentVolumeClaimSpec.
func DefaultPVCSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		m := corev1.PersistentVolumeFilesystem
		spec.VolumeMode = &m
	}
	defaultResourceList(spec.Resources.Limits)
	defaultResourceList(spec.Resources.Requests)
}

// ValidatePodTemplate checks a workload's pod template: its labels and annotations and its
// pod spec. selector, when not nil, must match the template's labels.
func ValidatePodTemplate(t *corev1.PodTemplateSpec, selector labels.Selector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if selector != nil && !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(p.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	// upstream's ValidatePodTemplateSpec reports these without "metadata"
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, p.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, p.Child("spec"), podSpecOptions{})...)
	return errs
}

func imageTag(image string) string {
	if i := indexByte(image, '@'); i >= 0 {
		return "digest"
	}
	for i := len(image) - 1; i >= 0; i-- {
		switch image[i] {
		case ':':
			return image[i+1:]
		case '/':
			return ""
		}
	}
	return ""
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// ValidateAlwaysRestartTemplate adds upstream's rules for templates of pods that are always
// restarted (replica sets, deployments, stateful sets, daemon sets, replication controllers);
// kind names the owner in upstream's message ("ReplicaSet", "StatefulSet").
func ValidateAlwaysRestartTemplate(t *corev1.PodTemplateSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// WithTemplateInitResizePolicy adds to k's strategy upstream's refusal of a RestartContainer
// resize policy on a non-sidecar init container of the pod template tmpl finds (at p, nil
// for none): on create, and on update unless the stored template already has one
// (AllowExistingRestartContainerForNonSidecarInitContainer).
func WithTemplateInitResizePolicy(k *registry.Kind, p *field.Path, tmpl func(runtime.Object) *corev1.PodTemplateSpec) *registry.Kind {
	ip := p.Child("spec", "initContainers")
	check := func(obj runtime.Object) field.ErrorList {
		if t := tmpl(obj); t != nil {
			return initRestartContainerErrs(t.Spec.InitContainers, ip)
		}
		return nil
	}
	validateNew, validateUpdate := k.Strategy.ValidateNew, k.Strategy.ValidateUpdate
	k.Strategy.ValidateNew = func(obj runtime.Object) field.ErrorList {
		var errs field.ErrorList
		if validateNew != nil {
			errs = validateNew(obj)
		}
		return append(errs, check(obj)...)
	}
	k.Strategy.ValidateUpdate = func(obj, old runtime.Object) field.ErrorList {
		var errs field.ErrorList
		if validateUpdate != nil {
			errs = validateUpdate(obj, old)
		}
		if len(check(old)) > 0 {
			return errs
		}
		return append(errs, check(obj)...)
	}
	return k
}
