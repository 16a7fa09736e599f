package workloads

import (
	"encoding/json"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ControllerRevisionsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "apps", Version: "v1", Kind: "ControllerRevision", ListKind: "ControllerRevisionList", Plural: "controllerrevisions", Singular: "controllerrevision",
			Namespaced: true},
		New:     func() runtime.Object { return &appsv1.ControllerRevision{} },
		NewList: func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				cr := obj.(*appsv1.ControllerRevision)
				var errs field.ErrorList
				if cr.Revision < 0 {
					errs = append(errs, field.Invalid(field.NewPath("revision"), cr.Revision, "must be greater than or equal to 0"))
				}
				var v any
				p := field.NewPath("data")
				if cr.Data.Raw == nil {
					errs = append(errs, field.Required(p, "data is mandatory"))
				} else if err := json.Unmarshal(cr.Data.Raw, &v); err != nil {
					errs = append(errs, field.Invalid(p, "<value omitted>", fmt.Sprintf("error parsing data: %v", err.Error())))
				} else if v == nil {
					errs = append(errs, field.Required(p, "data is mandatory"))
				} else if _, isObject := v.(map[string]any); !isObject {
					errs = append(errs, field.Required(p, "data must be a valid JSON object"))
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				cr, oldCR := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
				return registry.Immutable(string(cr.Data.Raw), string(oldCR.Data.Raw), field.NewPath("data"))
			},
		},
	}
}
