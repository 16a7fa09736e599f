package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ValidateProtocol(proto corev1.Protocol, p *field.Path) field.ErrorList {
	switch proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, proto, []string{"TCP", "UDP", "SCTP"})}
}

// ValidateNonnegative is upstream's ValidateNonnegativeField for optional int32 fields.
func ValidateNonnegative(v *int32, p *field.Path) field.ErrorList {
	if v != nil && *v < 0 {
		return field.ErrorList{field.Invalid(p, int64(*v), "must be greater than or equal to 0")}
	}
	return nil
}

func Int32Ptr(v int32) *int32 { return &v }

func BoolPtr(v bool) *bool { return &v }

// ValidateDataKeys checks configmap and secret keys.
func ValidateDataKeys(keys []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range keys {
		for _, msg := range utilvalidation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
	}
	return errs
}

func Immutable(newVal, oldVal any, p *field.Path) field.ErrorList {
	if fmt.Sprint(newVal) != fmt.Sprint(oldVal) {
		return field.ErrorList{field.Invalid(p, newVal, "field is immutable")}
	}
	return nil
}

func DefaultIntOrString(v *intstr.IntOrString, def intstr.IntOrString) *intstr.IntOrString {
	if v == nil {
		return &def
	}
	return v
}
