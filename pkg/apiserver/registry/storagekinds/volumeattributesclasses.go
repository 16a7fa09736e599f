package storagekinds

import (
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// VolumeAttributesClassesKind serves VolumeAttributesClasses (GA in 1.34): a CSI driver's
// mutable volume parameters that claims name; the driver and parameters are fixed once made.
func VolumeAttributesClassesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttributesClass", ListKind: "VolumeAttributesClassList",
			Plural: "volumeattributesclasses", Singular: "volumeattributesclass", ShortNames: []string{"vac"}},
		New:     func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
		NewList: func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				c := obj.(*storagev1.VolumeAttributesClass)
				var errs field.ErrorList
				if c.DriverName == "" {
					errs = append(errs, field.Required(field.NewPath("driverName"), ""))
				} else {
					errs = append(errs, registry.ValidateQualifiedName(strings.ToLower(c.DriverName), field.NewPath("driverName"))...)
				}
				return append(errs, validateParameters(c.Parameters, false, field.NewPath("parameters"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				c, o := obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
				var errs field.ErrorList
				if c.DriverName != o.DriverName {
					errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
				}
				if !registry.SemanticEqual(c.Parameters, o.Parameters) {
					errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
				}
				return errs
			},
		},
	}
}

// validateParameters is upstream's for a class's driver parameters: no empty key, 256 KiB in
// all, at least one pair unless allowEmpty.
func validateParameters(params map[string]string, allowEmpty bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > 256*1024 {
		errs = append(errs, field.TooLong(p, "", 256*1024))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(p, "must contain at least one key/value pair"))
	}
	return errs
}
