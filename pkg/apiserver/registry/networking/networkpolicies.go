package networking

import (
	"net"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func NetworkPoliciesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy", ListKind: "NetworkPolicyList", Plural: "networkpolicies",
			Singular: "networkpolicy", ShortNames: []string{"netpol"}, Namespaced: true},
		New:     func() runtime.Object { return &networkingv1.NetworkPolicy{} },
		NewList: func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(np *networkingv1.NetworkPolicy) networkingv1.NetworkPolicySpec { return np.Spec }),
			Default: func(obj runtime.Object) {
				np := obj.(*networkingv1.NetworkPolicy)
				if len(np.Spec.PolicyTypes) == 0 {
					np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
					if len(np.Spec.Egress) != 0 {
						np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
					}
				}
				for i := range np.Spec.Ingress {
					defaultPolicyPorts(np.Spec.Ingress[i].Ports)
				}
				for i := range np.Spec.Egress {
					defaultPolicyPorts(np.Spec.Egress[i].Ports)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateNetworkPolicy(obj.(*networkingv1.NetworkPolicy))
			},
		},
	}
}

func defaultPolicyPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		registry.SetDefault(&ports[i].Protocol, corev1.ProtocolTCP)
	}
}

func validateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	errs := registry.ValidateSelector(&np.Spec.PodSelector, spec.Child("podSelector"))
	for i, rule := range np.Spec.Ingress {
		rp := spec.Child("ingress").Index(i)
		errs = append(errs, validatePolicyPorts(rule.Ports, rp.Child("ports"))...)
		errs = append(errs, validatePolicyPeers(rule.From, rp.Child("from"))...)
	}
	for i, rule := range np.Spec.Egress {
		rp := spec.Child("egress").Index(i)
		errs = append(errs, validatePolicyPorts(rule.Ports, rp.Child("ports"))...)
		errs = append(errs, validatePolicyPeers(rule.To, rp.Child("to"))...)
	}
	if len(np.Spec.PolicyTypes) > 2 {
		errs = append(errs, field.Invalid(spec.Child("policyTypes"), &np.Spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range np.Spec.PolicyTypes {
		errs = append(errs, registry.OneOf(t, spec.Child("policyTypes").Index(i), networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress)...)
	}
	return errs
}

func validatePolicyPorts(ports []networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, port := range ports {
		pp := p.Index(i)
		if port.Protocol != nil {
			errs = append(errs, registry.ValidateProtocol(*port.Protocol, pp.Child("protocol"))...)
		}
		switch {
		case port.Port == nil:
			if port.EndPort != nil {
				errs = append(errs, field.Invalid(pp.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
			}
		case port.Port.Type == intstr.Int:
			errs = append(errs, registry.ValidatePortNumber(port.Port.IntVal, pp.Child("port"))...)
			if port.EndPort != nil {
				if *port.EndPort < port.Port.IntVal {
					errs = append(errs, field.Invalid(pp.Child("endPort"), port.Port.IntVal, "must be greater than or equal to `port`"))
				}
				errs = append(errs, registry.ValidatePortNumber(*port.EndPort, pp.Child("endPort"))...)
			}
		default:
			if port.EndPort != nil {
				errs = append(errs, field.Invalid(pp.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
			}
			errs = append(errs, registry.ValidateMessages(port.Port.StrVal, utilvalidation.IsValidPortName(port.Port.StrVal), pp.Child("port"))...)
		}
	}
	return errs
}

func validatePolicyPeers(peers []networkingv1.NetworkPolicyPeer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, peer := range peers {
		pp := p.Index(i)
		n := 0
		if peer.PodSelector != nil {
			n++
			errs = append(errs, registry.ValidateSelector(peer.PodSelector, pp.Child("podSelector"))...)
		}
		if peer.NamespaceSelector != nil {
			n++
			errs = append(errs, registry.ValidateSelector(peer.NamespaceSelector, pp.Child("namespaceSelector"))...)
		}
		if peer.IPBlock != nil {
			n++
			errs = append(errs, validateIPBlock(peer.IPBlock, pp.Child("ipBlock"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Required(pp, "must specify a peer"))
		case peer.IPBlock != nil && n > 1:
			errs = append(errs, field.Forbidden(pp, "may not specify both ipBlock and another peer"))
		}
	}
	return errs
}

func validateIPBlock(b *networkingv1.IPBlock, p *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(p.Child("cidr"), "")}
	}
	_, cidr, err := net.ParseCIDR(b.CIDR)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("cidr"), b.CIDR, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")}
	}
	var errs field.ErrorList
	for i, ex := range b.Except {
		ep := p.Child("except").Index(i)
		ip, exNet, err := net.ParseCIDR(ex)
		if err != nil {
			errs = append(errs, field.Invalid(ep, ex, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
			continue
		}
		cOnes, _ := cidr.Mask.Size()
		eOnes, _ := exNet.Mask.Size()
		if !cidr.Contains(ip) || eOnes <= cOnes {
			errs = append(errs, field.Invalid(ep, ex, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}
