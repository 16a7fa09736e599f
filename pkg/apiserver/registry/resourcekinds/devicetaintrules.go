package resourcekinds

import (
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DeviceTaintRulesKind serves DeviceTaintRules (GA in 1.37): cluster-scoped, generation
// counted, conditions written by the controller-manager's device taint eviction through
// /status.
func DeviceTaintRulesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: group, Version: version, Kind: "DeviceTaintRule", ListKind: "DeviceTaintRuleList",
			Plural: "devicetaintrules", Singular: "devicetaintrule"},
		New:     func() runtime.Object { return &resourcev1.DeviceTaintRule{} },
		NewList: func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*resourcev1.DeviceTaintRule).Status = resourcev1.DeviceTaintRuleStatus{}
			},
			PrepareForUpdate: registry.Rule(func(r, old *resourcev1.DeviceTaintRule) { r.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(r, old *resourcev1.DeviceTaintRule) {
				r.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&r.ObjectMeta, &old.ObjectMeta)
			}),
			SpecChanged: registry.Changed(func(r *resourcev1.DeviceTaintRule) resourcev1.DeviceTaintRuleSpec { return r.Spec }),
			// upstream's SetDefaults_DeviceTaint: the time the taint was added, to the second.
			Default: func(obj runtime.Object) {
				t := &obj.(*resourcev1.DeviceTaintRule).Spec.Taint
				if t.TimeAdded == nil {
					t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*resourcev1.DeviceTaintRule).Spec
				return validateTaintRuleSpec(s, nil)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateTaintRuleSpec(&obj.(*resourcev1.DeviceTaintRule).Spec, &old.(*resourcev1.DeviceTaintRule).Spec)
			},
		},
	}
}

func validateTaintRuleSpec(s, old *resourcev1.DeviceTaintRuleSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if sel := s.DeviceSelector; sel != nil {
		sp := p.Child("deviceSelector")
		if sel.Driver != nil {
			errs = append(errs, validateDriverName(*sel.Driver, sp.Child("driver"))...)
		}
		if sel.Pool != nil && *sel.Pool == "" {
			errs = append(errs, field.Required(sp.Child("pool"), ""))
		}
	}
	t, tp := s.Taint, p.Child("taint")
	errs = append(errs, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
	if t.Value != "" {
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
		}
	}
	if old == nil || old.Taint.Effect != t.Effect {
		switch t.Effect {
		case "":
			errs = append(errs, field.Required(tp.Child("effect"), ""))
		case resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone:
		default:
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, []resourcev1.DeviceTaintEffect{
				resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}))
		}
	}
	return errs
}
