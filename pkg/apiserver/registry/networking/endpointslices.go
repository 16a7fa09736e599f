package networking

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const maxEndpointSliceEndpoints, maxEndpointSlicePorts = 1000, 100

func EndpointSlicesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice", ListKind: "EndpointSliceList", Plural: "endpointslices",
			Singular: "endpointslice", Namespaced: true},
		New:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Strategy: registry.Strategy{
			// An EndpointSlice has no spec: anything but metadata counts, and its labels
			// (the service it belongs to), as upstream.
			SpecChanged: func(obj, old runtime.Object) bool {
				s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
				return !apiequality.Semantic.DeepEqual(s.Labels, o.Labels) || s.AddressType != o.AddressType ||
					!apiequality.Semantic.DeepEqual(s.Endpoints, o.Endpoints) || !apiequality.Semantic.DeepEqual(s.Ports, o.Ports)
			},
			Default: func(obj runtime.Object) {
				for i := range obj.(*discoveryv1.EndpointSlice).Ports {
					pt := &obj.(*discoveryv1.EndpointSlice).Ports[i]
					registry.SetDefault(&pt.Name, "")
					registry.SetDefault(&pt.Protocol, corev1.ProtocolTCP)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateEndpointSlice(obj.(*discoveryv1.EndpointSlice))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.ImmutableField(obj.(*discoveryv1.EndpointSlice).AddressType, old.(*discoveryv1.EndpointSlice).AddressType, field.NewPath("addressType"))
			},
		},
	}
}

func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	at := field.NewPath("addressType")
	if es.AddressType == "" {
		errs = append(errs, field.Required(at, ""))
	} else {
		errs = append(errs, registry.OneOf(es.AddressType, at, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)...)
	}
	ep := field.NewPath("endpoints")
	if len(es.Endpoints) > maxEndpointSliceEndpoints {
		errs = append(errs, field.TooMany(ep, len(es.Endpoints), maxEndpointSliceEndpoints))
	}
	for i, e := range es.Endpoints {
		p := ep.Index(i)
		ap := p.Child("addresses")
		if len(e.Addresses) == 0 {
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		} else if len(e.Addresses) > 100 {
			errs = append(errs, field.TooMany(ap, len(e.Addresses), 100))
		}
		for j, a := range e.Addresses {
			switch es.AddressType {
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				errs = append(errs, core.ValidateEndpointSliceAddress(a, string(es.AddressType), ap, j)...)
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, registry.ValidateDNS1123Subdomain(a, ap.Index(j))...)
			}
		}
		if e.NodeName != nil {
			errs = append(errs, registry.ValidateDNS1123Subdomain(*e.NodeName, p.Child("nodeName"))...)
		}
		if e.Hostname != nil {
			errs = append(errs, registry.ValidateMessages(*e.Hostname, utilvalidation.IsDNS1123Label(*e.Hostname), p.Child("hostname"))...)
		}
	}
	pp := field.NewPath("ports")
	if len(es.Ports) > maxEndpointSlicePorts {
		errs = append(errs, field.TooMany(pp, len(es.Ports), maxEndpointSlicePorts))
	}
	names := map[string]bool{}
	for i, port := range es.Ports {
		p := pp.Index(i)
		if port.Name != nil && *port.Name != "" {
			errs = append(errs, registry.ValidateMessages(*port.Name, utilvalidation.IsDNS1123Label(*port.Name), p.Child("name"))...)
		}
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, registry.ValidateProtocol(*port.Protocol, p.Child("protocol"))...)
		}
		if port.Port != nil {
			errs = append(errs, registry.ValidatePortNumber(*port.Port, p.Child("port"))...)
		}
		if port.AppProtocol != nil {
			errs = append(errs, registry.ValidateQualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}
