package networking

import (
	"net/netip"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func IPAddressesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "networking.k8s.io", Version: "v1", Kind: "IPAddress", ListKind: "IPAddressList", Plural: "ipaddresses",
			Singular: "ipaddress", ShortNames: []string{"ip"}},
		New:     func() runtime.Object { return &networkingv1.IPAddress{} },
		NewList: func() runtime.Object { return &networkingv1.IPAddressList{} },
		Strategy: registry.Strategy{
			NameValidation: validateIPAddressName,
			Validate: func(obj runtime.Object) field.ErrorList {
				ip := obj.(*networkingv1.IPAddress)
				p := field.NewPath("spec", "parentRef")
				ref := ip.Spec.ParentRef
				if ref == nil {
					return field.ErrorList{field.Required(p, "")}
				}
				var errs field.ErrorList
				errs = append(errs, registry.RequiredString(ref.Resource, p.Child("resource"))...)
				errs = append(errs, registry.RequiredString(ref.Name, p.Child("name"))...)
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.ImmutableField(obj.(*networkingv1.IPAddress).Spec.ParentRef, old.(*networkingv1.IPAddress).Spec.ParentRef, field.NewPath("spec", "parentRef"))
			},
		},
	}
}

// validateIPAddressName: an IPAddress is named by the address it holds, in canonical form.
var validateIPAddressName apivalidation.ValidateNameFunc = func(name string, _ bool) []string {
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return []string{"must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}
	}
	if ip.String() != name {
		return []string{"must be in canonical form (\"" + ip.String() + "\")"}
	}
	return nil
}
