package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodSpec is the minimal pod spec validation shared by pods and pod templates.
func validatePodSpec(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), ""))
	}
	names := sets.New[string]()
	check := func(cs []corev1.Container, path *field.Path) {
		for i, c := range cs {
			cp := path.Index(i)
			if c.Name == "" {
				errs = append(errs, field.Required(cp.Child("name"), ""))
			} else {
				for _, msg := range utilvalidation.IsDNS1123Label(c.Name) {
					errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
				}
				if names.Has(c.Name) {
					errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
				}
				names.Insert(c.Name)
			}
			if c.Image == "" {
				errs = append(errs, field.Required(cp.Child("image"), ""))
			}
			for j, port := range c.Ports {
				pp := cp.Child("ports").Index(j)
				for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
					errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
				}
				errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
			}
		}
	}
	check(spec.InitContainers, p.Child("initContainers"))
	check(spec.Containers, p.Child("containers"))
	switch spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), spec.RestartPolicy, []string{"Always", "OnFailure", "Never"}))
	}
	return errs
}

func validateProtocol(proto corev1.Protocol, p *field.Path) field.ErrorList {
	switch proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, proto, []string{"TCP", "UDP", "SCTP"})}
}

// defaultPodSpec fills the defaults upstream's defaulters fill.
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := int64(30)
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			c := &cs[i]
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
		}
	}
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

// validateDataKeys checks configmap and secret keys.
func validateDataKeys(keys []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range keys {
		for _, msg := range utilvalidation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
	}
	return errs
}

func immutable(newVal, oldVal any, p *field.Path) field.ErrorList {
	if fmt.Sprint(newVal) != fmt.Sprint(oldVal) {
		return field.ErrorList{field.Invalid(p, newVal, "field is immutable")}
	}
	return nil
}

func defaultIntOrString(v *intstr.IntOrString, def intstr.IntOrString) *intstr.IntOrString {
	if v == nil {
		return &def
	}
	return v
}
