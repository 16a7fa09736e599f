// Package resourcekinds holds the resource.k8s.io/v1 kinds of dynamic resource allocation
// (DRA): device classes, resource claims and their templates, resource slices and device
// taint rules, GA and served by default since Kubernetes 1.34 (device taint rules 1.37).
// Each kind is one file whose XxxKind function the controlplane lists. Validation follows
// upstream's pkg/apis/resource/validation for what clients and the upstream controllers
// rely on (required fields, unions, immutability); the CEL selectors are stored, not compiled.
package resourcekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const group, version = "resource.k8s.io", "v1"

// DeviceClassesKind serves DeviceClasses: cluster-scoped, generation counted on spec changes.
func DeviceClassesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: group, Version: version, Kind: "DeviceClass", ListKind: "DeviceClassList",
			Plural: "deviceclasses", Singular: "deviceclass"},
		New:     func() runtime.Object { return &resourcev1.DeviceClass{} },
		NewList: func() runtime.Object { return &resourcev1.DeviceClassList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(c *resourcev1.DeviceClass) resourcev1.DeviceClassSpec { return c.Spec }),
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*resourcev1.DeviceClass).Spec
				p := field.NewPath("spec")
				errs := validateSelectors(s.Selectors, p.Child("selectors"))
				for i, c := range s.Config {
					errs = append(errs, validateOpaque(c.Opaque, p.Child("config").Index(i))...)
				}
				return errs
			},
		},
	}
}

// validateSelectors: each selector needs its CEL expression.
func validateSelectors(sels []resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(sels) > resourcev1.DeviceSelectorsMaxSize {
		errs = append(errs, field.TooMany(p, len(sels), resourcev1.DeviceSelectorsMaxSize))
	}
	for i, s := range sels {
		if s.CEL == nil {
			errs = append(errs, field.Required(p.Index(i).Child("cel"), ""))
			continue
		}
		if s.CEL.Expression == "" {
			errs = append(errs, field.Required(p.Index(i).Child("cel", "expression"), ""))
		}
	}
	return errs
}

// validateOpaque: an opaque configuration names its driver and carries parameters.
func validateOpaque(o *resourcev1.OpaqueDeviceConfiguration, p *field.Path) field.ErrorList {
	if o == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	p = p.Child("opaque")
	var errs field.ErrorList
	if o.Driver == "" {
		errs = append(errs, field.Required(p.Child("driver"), ""))
	} else {
		errs = append(errs, registry.ValidateDNS1123Subdomain(o.Driver, p.Child("driver"))...)
	}
	if len(o.Parameters.Raw) == 0 {
		errs = append(errs, field.Required(p.Child("parameters"), ""))
	}
	return errs
}
