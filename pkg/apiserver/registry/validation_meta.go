package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Shared defaulting and validation helpers of the non-workload kinds (networking, storage,
// certificates, ...). They wrap apimachinery's helpers with upstream's field paths.

// SetDefault sets *p to v when it is unset.
func SetDefault[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}

// RequiredString reports an empty string as upstream's "Required value".
func RequiredString(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return nil
}

// OneOf reports v unless it is one of allowed ("Unsupported value").
func OneOf[T ~string](v T, p *field.Path, allowed ...T) field.ErrorList {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return field.ErrorList{field.NotSupported(p, v, names)}
}

// ValidateSelector checks a label selector as upstream's unversioned validation does.
func ValidateSelector(sel *metav1.LabelSelector, p *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
}

// ValidateMessages turns apimachinery's string checks into Invalid errors.
func ValidateMessages(v string, msgs []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, v, m))
	}
	return errs
}

// ValidateDNS1123Subdomain checks a reference to an object named by a DNS-1123 subdomain.
func ValidateDNS1123Subdomain(v string, p *field.Path) field.ErrorList {
	return ValidateMessages(v, utilvalidation.IsDNS1123Subdomain(v), p)
}

// ValidateQualifiedName checks a qualified name (label key shape: "example.com/name").
func ValidateQualifiedName(v string, p *field.Path) field.ErrorList {
	return ValidateMessages(v, utilvalidation.IsQualifiedName(v), p)
}

// ValidateNonNegativeQuantity is upstream's ValidateNonnegativeQuantity.
func ValidateNonNegativeQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than or equal to 0")}
	}
	return nil
}

// ValidatePositiveQuantity is upstream's ValidatePositiveQuantityValue.
func ValidatePositiveQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than zero")}
	}
	return nil
}

// ValidateResourceList checks every quantity of a resource list is non-negative and every
// name qualified, with upstream's "spec.hard[cpu]" paths.
func ValidateResourceList(l corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range l {
		kp := p.Key(string(name))
		errs = append(errs, ValidateQualifiedName(string(name), kp)...)
		errs = append(errs, ValidateNonNegativeQuantity(q, kp)...)
	}
	return errs
}

// ValidatePortNumber checks a port (1-65535).
func ValidatePortNumber(port int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, m := range utilvalidation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(p, port, m))
	}
	return errs
}

// ImmutableField is upstream's ValidateImmutableField: "field is immutable".
func ImmutableField(newVal, oldVal any, p *field.Path) field.ErrorList {
	if !SemanticEqual(newVal, oldVal) {
		return field.ErrorList{field.Invalid(p, newVal, "field is immutable")}
	}
	return nil
}

// maxDataBytes is upstream's limit on a ConfigMap's or Secret's data (corev1 MaxSecretSize).
const maxDataBytes = corev1.MaxSecretSize

// ValidateDataSize reports data over 1 MiB in total, as upstream does for ConfigMaps and
// Secrets. kube-apiserver 1.33 says "Too long: must have at most 1048576 bytes"; the
// apimachinery in go.mod words TooLong differently, so the detail is upstream's.
func ValidateDataSize(total int, p *field.Path) field.ErrorList {
	if total > maxDataBytes {
		e := field.TooLong(p, "", maxDataBytes)
		e.Detail = fmt.Sprintf("must have at most %d bytes", maxDataBytes)
		return field.ErrorList{e}
	}
	return nil
}

func SemanticEqual(a, b any) bool { return apiequality.Semantic.DeepEqual(a, b) }
