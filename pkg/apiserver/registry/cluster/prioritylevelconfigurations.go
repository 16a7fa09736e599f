package cluster

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func PriorityLevelConfigurationsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "PriorityLevelConfiguration", ListKind: "PriorityLevelConfigurationList",
			Plural: "prioritylevelconfigurations", Singular: "prioritylevelconfiguration"},
		New:     func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
		NewList: func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(pl, old *flowcontrolv1.PriorityLevelConfiguration) { pl.Status = old.Status }),
			// Status writes change status only: metadata is kept whole, managedFields aside.
			PrepareForStatusUpdate: registry.Rule(func(pl, old *flowcontrolv1.PriorityLevelConfiguration) {
				pl.Spec = old.Spec
				registry.KeepMetadata(&pl.ObjectMeta, &old.ObjectMeta)
			}),
			SpecChanged: registry.Changed(func(pl *flowcontrolv1.PriorityLevelConfiguration) flowcontrolv1.PriorityLevelConfigurationSpec {
				return pl.Spec
			}),
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*flowcontrolv1.PriorityLevelConfiguration).Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
			},
			Default: func(obj runtime.Object) {
				s := &obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec
				if e := s.Exempt; e != nil {
					registry.SetDefault(&e.NominalConcurrencyShares, 0)
					registry.SetDefault(&e.LendablePercent, 0)
				}
				if l := s.Limited; l != nil {
					registry.SetDefault(&l.NominalConcurrencyShares, 30)
					registry.SetDefault(&l.LendablePercent, 0)
					if l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
						if l.LimitResponse.Queuing == nil {
							l.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{}
						}
					}
					if q := l.LimitResponse.Queuing; q != nil {
						if q.HandSize == 0 {
							q.HandSize = 8
						}
						if q.Queues == 0 {
							q.Queues = 64
						}
						if q.QueueLengthLimit == 0 {
							q.QueueLengthLimit = 50
						}
					}
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				plc := obj.(*flowcontrolv1.PriorityLevelConfiguration)
				p := field.NewPath("spec")
				errs := registry.OneOf(plc.Spec.Type, p.Child("type"), flowcontrolv1.PriorityLevelEnablementExempt, flowcontrolv1.PriorityLevelEnablementLimited)
				switch plc.Spec.Type {
				case flowcontrolv1.PriorityLevelEnablementExempt:
					if plc.Spec.Limited != nil {
						errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
					}
				case flowcontrolv1.PriorityLevelEnablementLimited:
					l := plc.Spec.Limited
					if l == nil {
						errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
						break
					}
					lp := p.Child("limited")
					if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
						errs = append(errs, field.Invalid(lp.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
					}
					if l.LendablePercent != nil && (*l.LendablePercent < 0 || *l.LendablePercent > 100) {
						errs = append(errs, field.Invalid(lp.Child("lendablePercent"), *l.LendablePercent, "must be between 0 and 100, inclusive"))
					}
					rp := lp.Child("limitResponse")
					errs = append(errs, registry.OneOf(l.LimitResponse.Type, rp.Child("type"), flowcontrolv1.LimitResponseTypeQueue, flowcontrolv1.LimitResponseTypeReject)...)
					if q := l.LimitResponse.Queuing; q != nil {
						qp := rp.Child("queuing")
						if l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeReject {
							errs = append(errs, field.Forbidden(qp, "must be nil if limited.limitResponse.type is not Limited"))
						}
						if q.QueueLengthLimit <= 0 {
							errs = append(errs, field.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
						}
						if q.Queues <= 0 {
							errs = append(errs, field.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
						}
						if q.HandSize <= 0 {
							errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
						} else if q.HandSize > q.Queues {
							errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, "should not be greater than queues"))
						}
					}
				}
				return errs
			},
		},
	}
}
