package resourcekinds

import (
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceSlicesKind serves ResourceSlices, the devices a DRA driver publishes per node or
// pool: cluster-scoped, generation counted, selectable by spec.nodeName, spec.driver and
// spec.pool.name (the scheduler and kubelet watch them so).
func ResourceSlicesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: group, Version: version, Kind: "ResourceSlice", ListKind: "ResourceSliceList",
			Plural: "resourceslices", Singular: "resourceslice"},
		New:     func() runtime.Object { return &resourcev1.ResourceSlice{} },
		NewList: func() runtime.Object { return &resourcev1.ResourceSliceList{} },
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(s *resourcev1.ResourceSlice) resourcev1.ResourceSliceSpec { return s.Spec }),
			Fields: func(obj runtime.Object) fields.Set {
				s := obj.(*resourcev1.ResourceSlice)
				node := ""
				if s.Spec.NodeName != nil {
					node = *s.Spec.NodeName
				}
				return fields.Set{resourcev1.ResourceSliceSelectorNodeName: node, resourcev1.ResourceSliceSelectorDriver: s.Spec.Driver,
					"spec.pool.name": s.Spec.Pool.Name}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateSliceSpec(&obj.(*resourcev1.ResourceSlice).Spec)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				s, o := obj.(*resourcev1.ResourceSlice).Spec, old.(*resourcev1.ResourceSlice).Spec
				p := field.NewPath("spec")
				errs := registry.ImmutableField(s.Pool.Name, o.Pool.Name, p.Child("pool", "name"))
				errs = append(errs, registry.ImmutableField(s.Driver, o.Driver, p.Child("driver"))...)
				return append(errs, registry.ImmutableField(s.NodeName, o.NodeName, p.Child("nodeName"))...)
			},
		},
	}
}

// validateSliceSpec: a driver and pool, exactly one of the four ways to say which nodes
// the devices are on, at most 128 uniquely named devices.
func validateSliceSpec(s *resourcev1.ResourceSliceSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := validateDriverName(s.Driver, p.Child("driver"))
	pp := p.Child("pool")
	if s.Pool.Name == "" {
		errs = append(errs, field.Required(pp.Child("name"), ""))
	} else {
		for _, part := range strings.Split(s.Pool.Name, "/") {
			errs = append(errs, registry.ValidateDNS1123Subdomain(part, pp.Child("name"))...)
		}
	}
	if s.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(pp.Child("resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if s.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(pp.Child("generation"), s.Pool.Generation, "must be greater than or equal to zero"))
	}
	var set []string
	if s.NodeName != nil {
		if *s.NodeName == "" {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *s.NodeName, "must be either unset or set to a non-empty string"))
		} else {
			set = append(set, "`nodeName`")
			errs = append(errs, registry.ValidateDNS1123Subdomain(*s.NodeName, p.Child("nodeName"))...)
		}
	}
	if s.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		if len(s.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), s.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	for _, b := range []struct {
		name string
		v    *bool
	}{{"allNodes", s.AllNodes}, {"perDeviceNodeSelection", s.PerDeviceNodeSelection}} {
		if b.v != nil && !*b.v {
			errs = append(errs, field.Invalid(p.Child(b.name), *b.v, "must be either unset or set to true"))
		}
	}
	if s.AllNodes != nil && *s.AllNodes {
		set = append(set, "`allNodes`")
	}
	if s.PerDeviceNodeSelection != nil && *s.PerDeviceNodeSelection {
		set = append(set, "`perDeviceNodeSelection`")
	}
	switch {
	case len(set) == 0:
		errs = append(errs, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case len(set) > 1:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")),
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	if s.SharedCounters != nil && s.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	if len(s.Devices) > resourcev1.ResourceSliceMaxDevices {
		errs = append(errs, field.TooMany(p.Child("devices"), len(s.Devices), resourcev1.ResourceSliceMaxDevices))
	}
	seen := map[string]bool{}
	for i, d := range s.Devices {
		dp := p.Child("devices").Index(i).Child("name")
		if d.Name == "" {
			errs = append(errs, field.Required(dp, ""))
			continue
		}
		errs = append(errs, validateRequestName(d.Name, dp, seen)...)
	}
	return errs
}

// validateDriverName is upstream's: a DNS subdomain of at most 63 characters.
func validateDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.DriverNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DriverNameMaxLength))
	}
	return append(errs, registry.ValidateDNS1123Subdomain(name, p)...)
}
