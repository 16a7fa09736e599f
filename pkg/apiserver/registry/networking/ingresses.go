// Package networking holds the networking.k8s.io and discovery.k8s.io kinds: ingresses, ingress classes,
// network policies, IP addresses, service CIDRs and endpoint slices.
// Each kind is one file whose XxxKind function the controlplane lists.
package networking

import (
	"net"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func IngressesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", ListKind: "IngressList", Plural: "ingresses", Singular: "ingress",
			ShortNames: []string{"ing"}, Namespaced: true},
		KeyRoot: "ingress", // upstream's key (kept from extensions/v1beta1)
		New:     func() runtime.Object { return &networkingv1.Ingress{} },
		NewList: func() runtime.Object { return &networkingv1.IngressList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(ing, old *networkingv1.Ingress) { ing.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(ing, old *networkingv1.Ingress) { ing.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(ing *networkingv1.Ingress) networkingv1.IngressSpec { return ing.Spec }),
			PrepareForCreate:       func(obj runtime.Object) { obj.(*networkingv1.Ingress).Status = networkingv1.IngressStatus{} },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateIngress(obj.(*networkingv1.Ingress))
			},
		},
	}
}

const ingressClassAnnotation = "kubernetes.io/ingress.class"

var pathTypes = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific, networkingv1.PathTypePrefix}

func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(spec, ing.Spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if ing.Spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(ing.Spec.DefaultBackend, spec.Child("defaultBackend"))...)
	}
	if c := ing.Spec.IngressClassName; c != nil {
		errs = append(errs, registry.ValidateDNS1123Subdomain(*c, spec.Child("ingressClassName"))...)
		if a, ok := ing.Annotations[ingressClassAnnotation]; ok && a != *c {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(ingressClassAnnotation), a, "must match `ingressClassName` when both are specified"))
		}
	}
	for i, tls := range ing.Spec.TLS {
		tp := spec.Child("tls").Index(i)
		for j, h := range tls.Hosts {
			errs = append(errs, validateIngressHost(h, tp.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			errs = append(errs, registry.ValidateDNS1123Subdomain(tls.SecretName, tp.Child("secretName"))...)
		}
	}
	for i, rule := range ing.Spec.Rules {
		rp := spec.Child("rules").Index(i)
		if rule.Host != "" {
			if net.ParseIP(rule.Host) != nil {
				errs = append(errs, field.Invalid(rp.Child("host"), rule.Host, "must be a DNS name, not an IP address"))
			} else {
				errs = append(errs, validateIngressHost(rule.Host, rp.Child("host"))...)
			}
		}
		if rule.HTTP == nil {
			continue
		}
		hp := rp.Child("http")
		if len(rule.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp.Child("paths"), ""))
		}
		for j, path := range rule.HTTP.Paths {
			pp := hp.Child("paths").Index(j)
			errs = append(errs, validateIngressPath(path, pp)...)
			errs = append(errs, validateIngressBackend(&path.Backend, pp.Child("backend"))...)
		}
	}
	return errs
}

func validateIngressHost(h string, p *field.Path) field.ErrorList {
	if strings.HasPrefix(h, "*.") {
		return registry.ValidateMessages(h, utilvalidation.IsWildcardDNS1123Subdomain(h), p)
	}
	return registry.ValidateMessages(h, utilvalidation.IsDNS1123Subdomain(h), p)
}

func validateIngressPath(path networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must be an absolute path"))
		}
		for _, seq := range []string{"//", "/./", "/../", "%2f", "%2F"} {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must not contain '"+seq+"'"))
			}
		}
		for _, suf := range []string{"/..", "/."} {
			if strings.HasSuffix(path.Path, suf) {
				errs = append(errs, field.Invalid(p.Child("path"), path.Path, "cannot end with '"+suf+"'"))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, registry.OneOf(*path.PathType, p.Child("pathType"), pathTypes...)...)
	}
	return errs
}

func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		var errs field.ErrorList
		errs = append(errs, registry.RequiredString(b.Resource.Kind, p.Child("resource", "kind"))...)
		return append(errs, registry.RequiredString(b.Resource.Name, p.Child("resource", "name"))...)
	case b.Service != nil:
		var errs field.ErrorList
		if b.Service.Name == "" {
			errs = append(errs, field.Required(p.Child("service", "name"), ""))
		} else {
			errs = append(errs, registry.ValidateMessages(b.Service.Name, utilvalidation.IsDNS1035Label(b.Service.Name), p.Child("service", "name"))...)
		}
		port := b.Service.Port
		switch {
		case port.Name != "" && port.Number != 0:
			errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
		case port.Name != "":
			errs = append(errs, registry.ValidateMessages(port.Name, utilvalidation.IsValidPortName(port.Name), p.Child("service", "port", "name"))...)
		case port.Number != 0:
			errs = append(errs, registry.ValidatePortNumber(port.Number, p.Child("service", "port", "number"))...)
		default:
			errs = append(errs, field.Required(p, "port name or number is required"))
		}
		return errs
	}
	return field.ErrorList{field.Invalid(p, "", "resource or service backend is required")}
}
