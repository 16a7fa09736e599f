package networking

import (
	"net/netip"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ServiceCIDRsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "networking.k8s.io", Version: "v1", Kind: "ServiceCIDR", ListKind: "ServiceCIDRList", Plural: "servicecidrs",
			Singular: "servicecidr"},
		New:     func() runtime.Object { return &networkingv1.ServiceCIDR{} },
		NewList: func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) { obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{} },
			PrepareForUpdate: registry.Rule(func(c, old *networkingv1.ServiceCIDR) { c.Status = old.Status }),
			// Since 1.37 a status write changes no metadata either (as diff-upstream shows).
			PrepareForStatusUpdate: registry.Rule(func(c, old *networkingv1.ServiceCIDR) {
				c.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&c.ObjectMeta, &old.ObjectMeta)
			}),
			Validate: func(obj runtime.Object) field.ErrorList {
				cidrs := obj.(*networkingv1.ServiceCIDR).Spec.CIDRs
				p := field.NewPath("spec", "cidrs")
				switch {
				case len(cidrs) == 0:
					return field.ErrorList{field.Required(p, "at least one CIDR required")}
				case len(cidrs) > 2:
					return field.ErrorList{field.Invalid(p, cidrs, "may only hold up to 2 values")}
				}
				var errs field.ErrorList
				for i, c := range cidrs {
					pfx, err := netip.ParsePrefix(c)
					if err != nil || pfx.Masked() != pfx {
						errs = append(errs, field.Invalid(p.Index(i), c, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
					}
				}
				if len(errs) == 0 && len(cidrs) == 2 {
					a, _ := netip.ParsePrefix(cidrs[0])
					b, _ := netip.ParsePrefix(cidrs[1])
					if a.Addr().Is4() == b.Addr().Is4() {
						errs = append(errs, field.Invalid(p, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
					}
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				n, o := obj.(*networkingv1.ServiceCIDR).Spec.CIDRs, old.(*networkingv1.ServiceCIDR).Spec.CIDRs
				// A single-stack range may become dual-stack; nothing else changes.
				if len(o) == 1 && len(n) == 2 {
					return registry.ImmutableField(n[0], o[0], field.NewPath("spec", "cidrs").Index(0))
				}
				return registry.ImmutableField(n, o, field.NewPath("spec", "cidrs"))
			},
		},
	}
}
