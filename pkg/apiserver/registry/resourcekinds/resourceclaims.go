package resourcekinds

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceClaimsKind serves ResourceClaims: namespaced, the spec immutable, the allocation
// written by the scheduler through /status (which keeps the spec and resets metadata, as
// upstream's status strategy).
func ResourceClaimsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: group, Version: version, Kind: "ResourceClaim", ListKind: "ResourceClaimList",
			Plural: "resourceclaims", Singular: "resourceclaim", Namespaced: true},
		New:     func() runtime.Object { return &resourcev1.ResourceClaim{} },
		NewList: func() runtime.Object { return &resourcev1.ResourceClaimList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) { obj.(*resourcev1.ResourceClaim).Status = resourcev1.ResourceClaimStatus{} },
			PrepareForUpdate: registry.Rule(func(c, old *resourcev1.ResourceClaim) { c.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(c, old *resourcev1.ResourceClaim) {
				c.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&c.ObjectMeta, &old.ObjectMeta)
			}),
			Default: func(obj runtime.Object) { defaultClaimSpec(&obj.(*resourcev1.ResourceClaim).Spec) },
			Validate: func(obj runtime.Object) field.ErrorList {
				c := obj.(*resourcev1.ResourceClaim)
				return append(validateClaimSpec(&c.Spec, field.NewPath("spec")), validateClaimStatus(&c.Status, field.NewPath("status"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
				return registry.ImmutableField(c.Spec, o.Spec, field.NewPath("spec"))
			},
		},
	}
}

// ResourceClaimTemplatesKind serves ResourceClaimTemplates: the claim spec the
// controller-manager copies into a pod's claims; immutable.
func ResourceClaimTemplatesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: group, Version: version, Kind: "ResourceClaimTemplate", ListKind: "ResourceClaimTemplateList",
			Plural: "resourceclaimtemplates", Singular: "resourceclaimtemplate", Namespaced: true},
		New:     func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
		NewList: func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultClaimSpec(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec) },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateClaimSpec(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec, field.NewPath("spec", "spec"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				t, o := obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate)
				return registry.ImmutableField(t.Spec, o.Spec, field.NewPath("spec"))
			},
		},
	}
}

// defaultClaimSpec is upstream's SetDefaults_ExactDeviceRequest and _DeviceSubRequest.
func defaultClaimSpec(s *resourcev1.ResourceClaimSpec) {
	def := func(mode *resourcev1.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourcev1.DeviceAllocationModeExactCount
		}
		if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range s.Devices.Requests {
		r := &s.Devices.Requests[i]
		if r.Exactly != nil {
			def(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

// validateClaimSpec checks the requests (unique DNS-label names, exactly one of exactly and
// firstAvailable, a device class, the allocation mode), constraints and config.
func validateClaimSpec(s *resourcev1.ResourceClaimSpec, p *field.Path) field.ErrorList {
	p = p.Child("devices")
	var errs field.ErrorList
	names := map[string]bool{}
	reqs := p.Child("requests")
	if len(s.Devices.Requests) > resourcev1.DeviceRequestsMaxSize {
		errs = append(errs, field.TooMany(reqs, len(s.Devices.Requests), resourcev1.DeviceRequestsMaxSize))
	}
	for i, r := range s.Devices.Requests {
		rp := reqs.Index(i)
		errs = append(errs, validateRequestName(r.Name, rp.Child("name"), names)...)
		switch {
		case r.Exactly == nil && len(r.FirstAvailable) == 0:
			errs = append(errs, field.Required(rp, "exactly one of `exactly` or `firstAvailable` is required"))
		case r.Exactly != nil && len(r.FirstAvailable) > 0:
			errs = append(errs, field.Invalid(rp, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
		case r.Exactly != nil:
			e := r.Exactly
			ep := rp.Child("exactly")
			errs = append(errs, validateClassName(e.DeviceClassName, ep.Child("deviceClassName"))...)
			errs = append(errs, validateSelectors(e.Selectors, ep.Child("selectors"))...)
			errs = append(errs, validateAllocationMode(e.AllocationMode, e.Count, ep)...)
		default:
			sub := map[string]bool{}
			for j, sr := range r.FirstAvailable {
				sp := rp.Child("firstAvailable").Index(j)
				errs = append(errs, validateRequestName(sr.Name, sp.Child("name"), sub)...)
				errs = append(errs, validateClassName(sr.DeviceClassName, sp.Child("deviceClassName"))...)
				errs = append(errs, validateSelectors(sr.Selectors, sp.Child("selectors"))...)
				errs = append(errs, validateAllocationMode(sr.AllocationMode, sr.Count, sp)...)
			}
		}
	}
	for i, c := range s.Devices.Constraints {
		cp := p.Child("constraints").Index(i)
		switch {
		case c.MatchAttribute == nil && c.DistinctAttribute == nil:
			errs = append(errs, field.Required(cp.Child("matchAttribute"), ""))
		case c.MatchAttribute != nil && c.DistinctAttribute != nil:
			errs = append(errs, field.Required(cp, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
		}
	}
	for i, c := range s.Devices.Config {
		errs = append(errs, validateOpaque(c.Opaque, p.Child("config").Index(i))...)
	}
	return errs
}

func validateRequestName(name string, p *field.Path, seen map[string]bool) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if seen[name] {
		errs = append(errs, field.Duplicate(p, name))
	}
	seen[name] = true
	return errs
}

func validateClassName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return registry.ValidateDNS1123Subdomain(name, p)
}

func validateAllocationMode(mode resourcev1.DeviceAllocationMode, count int64, p *field.Path) field.ErrorList {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must not be specified when allocationMode is 'All'")}
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("allocationMode"), mode, []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount})}
	}
	return nil
}

// validateClaimStatus: reservedFor needs an allocation, and each consumer is named fully.
func validateClaimStatus(s *resourcev1.ResourceClaimStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.ReservedFor) > 0 && s.Allocation == nil {
		errs = append(errs, field.Forbidden(p.Child("reservedFor"), "may not be specified when `allocated` is not set"))
	}
	for i, r := range s.ReservedFor {
		rp := p.Child("reservedFor").Index(i)
		errs = append(errs, registry.RequiredString(r.Resource, rp.Child("resource"))...)
		errs = append(errs, registry.RequiredString(r.Name, rp.Child("name"))...)
		errs = append(errs, registry.RequiredString(string(r.UID), rp.Child("uid"))...)
	}
	return errs
}
