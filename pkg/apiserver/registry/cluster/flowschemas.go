package cluster

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func FlowSchemasKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "FlowSchema", ListKind: "FlowSchemaList", Plural: "flowschemas",
			Singular: "flowschema"},
		New:     func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
		NewList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(fs, old *flowcontrolv1.FlowSchema) { fs.Status = old.Status }),
			// Status writes change status only: metadata is kept whole, managedFields aside.
			PrepareForStatusUpdate: registry.Rule(func(fs, old *flowcontrolv1.FlowSchema) {
				fs.Spec = old.Spec
				registry.KeepMetadata(&fs.ObjectMeta, &old.ObjectMeta)
			}),
			SpecChanged:      registry.Changed(func(fs *flowcontrolv1.FlowSchema) flowcontrolv1.FlowSchemaSpec { return fs.Spec }),
			PrepareForCreate: func(obj runtime.Object) { obj.(*flowcontrolv1.FlowSchema).Status = flowcontrolv1.FlowSchemaStatus{} },
			Default: func(obj runtime.Object) {
				if fs := obj.(*flowcontrolv1.FlowSchema); fs.Spec.MatchingPrecedence == 0 {
					fs.Spec.MatchingPrecedence = 1000
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				fs := obj.(*flowcontrolv1.FlowSchema)
				p := field.NewPath("spec")
				var errs field.ErrorList
				if mp := fs.Spec.MatchingPrecedence; mp <= 0 || mp > 10000 {
					errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), mp, "must be between 1 and 10000 inclusively"))
				}
				if fs.Spec.PriorityLevelConfiguration.Name == "" {
					errs = append(errs, field.Required(p.Child("priorityLevelConfiguration", "name"), "must reference a priority level"))
				}
				if d := fs.Spec.DistinguisherMethod; d != nil {
					errs = append(errs, registry.OneOf(d.Type, p.Child("distinguisherMethod", "type"), flowcontrolv1.FlowDistinguisherMethodByNamespaceType, flowcontrolv1.FlowDistinguisherMethodByUserType)...)
				}
				for i, rule := range fs.Spec.Rules {
					rp := p.Child("rules").Index(i)
					if len(rule.Subjects) == 0 {
						errs = append(errs, field.Required(rp.Child("subjects"), "subjects must contain at least one value"))
					}
					for j, s := range rule.Subjects {
						errs = append(errs, registry.OneOf(s.Kind, rp.Child("subjects").Index(j).Child("kind"), flowcontrolv1.SubjectKindGroup, flowcontrolv1.SubjectKindServiceAccount, flowcontrolv1.SubjectKindUser)...)
					}
					if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
						errs = append(errs, field.Required(rp, "at least one of resourceRules and nonResourceRules has to be non-empty"))
					}
				}
				return errs
			},
		},
	}
}
