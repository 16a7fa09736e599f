// Package workloads holds the workload controllers' kinds: the apps group (deployments, replica sets,
// stateful sets, daemon sets, controller revisions), batch (jobs, cron jobs), autoscaling
// (horizontal pod autoscalers, v2 and v1) and policy (pod disruption budgets).
// Each kind is one file whose XxxKind function the controlplane lists.
package workloads

import (
	"strconv"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func DeploymentsKind() *registry.Kind {
	return core.WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Group: "apps", Version: "v1", Kind: "Deployment", ListKind: "DeploymentList", Plural: "deployments", Singular: "deployment",
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &appsv1.Deployment{} },
		NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
		Status:  true,
		Scale: &registry.ScaleAccessor{
			Replicas:       func(obj runtime.Object) int32 { return registry.ReplicasOr1(obj.(*appsv1.Deployment).Spec.Replicas) },
			SetReplicas:    func(obj runtime.Object, n int32) { obj.(*appsv1.Deployment).Spec.Replicas = &n },
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.Deployment).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return registry.LabelSelectorString(obj.(*appsv1.Deployment).Spec.Selector)
			},
		},
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(d, old *appsv1.Deployment) { d.Status = old.Status }),
			// /status may change annotations (the controller's revision) but not labels.
			PrepareForStatusUpdate: registry.Rule(func(d, old *appsv1.Deployment) {
				d.Spec = old.Spec
				d.Labels = old.Labels
			}),
			// Annotations count too, as upstream: they are copied to the deployment's
			// replica sets (rollbacks).
			SpecChanged: func(obj, old runtime.Object) bool {
				d, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
				return !apiequality.Semantic.DeepEqual(d.Spec, oldD.Spec) || !apiequality.Semantic.DeepEqual(d.Annotations, oldD.Annotations)
			},
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{}
			},
			Default: func(obj runtime.Object) {
				d := obj.(*appsv1.Deployment)
				if d.Spec.Replicas == nil {
					one := int32(1)
					d.Spec.Replicas = &one
				}
				if d.Spec.Strategy.Type == "" {
					d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
				}
				if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
					if d.Spec.Strategy.RollingUpdate == nil {
						d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
					}
					ru := d.Spec.Strategy.RollingUpdate
					ru.MaxUnavailable = registry.DefaultIntOrString(ru.MaxUnavailable, intstr.FromString("25%"))
					ru.MaxSurge = registry.DefaultIntOrString(ru.MaxSurge, intstr.FromString("25%"))
				}
				if d.Spec.RevisionHistoryLimit == nil {
					n := int32(10)
					d.Spec.RevisionHistoryLimit = &n
				}
				if d.Spec.ProgressDeadlineSeconds == nil {
					n := int32(600)
					d.Spec.ProgressDeadlineSeconds = &n
				}
				core.DefaultPodSpec(&d.Spec.Template.Spec)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				d := obj.(*appsv1.Deployment)
				p := field.NewPath("spec")
				errs := registry.ValidateNonnegative(d.Spec.Replicas, p.Child("replicas"))
				sel, selErrs := validateWorkloadSelector(d.Spec.Selector, p.Child("selector"), "deployment")
				errs = append(errs, selErrs...)
				errs = append(errs, core.ValidatePodTemplate(&d.Spec.Template, sel, p.Child("template"))...)
				errs = append(errs, core.ValidateAlwaysRestartTemplate(&d.Spec.Template, "ReplicaSet", p.Child("template"))...)
				errs = append(errs, registry.ValidateNonnegative(&d.Spec.MinReadySeconds, p.Child("minReadySeconds"))...)
				errs = append(errs, registry.ValidateNonnegative(d.Spec.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
				if d.Spec.ProgressDeadlineSeconds != nil {
					errs = append(errs, registry.ValidateNonnegative(d.Spec.ProgressDeadlineSeconds, p.Child("progressDeadlineSeconds"))...)
					if *d.Spec.ProgressDeadlineSeconds <= d.Spec.MinReadySeconds {
						errs = append(errs, field.Invalid(p.Child("progressDeadlineSeconds"), d.Spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
					}
				}
				switch d.Spec.Strategy.Type {
				case appsv1.RecreateDeploymentStrategyType:
					if d.Spec.Strategy.RollingUpdate != nil {
						errs = append(errs, field.Forbidden(p.Child("strategy", "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
					}
				case appsv1.RollingUpdateDeploymentStrategyType:
					if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil && ru.MaxSurge != nil {
						rp := p.Child("strategy", "rollingUpdate")
						errs = append(errs, validatePositiveIntOrPercent(*ru.MaxUnavailable, rp.Child("maxUnavailable"), true)...)
						errs = append(errs, validatePositiveIntOrPercent(*ru.MaxSurge, rp.Child("maxSurge"), false)...)
						if intOrPercentValue(*ru.MaxUnavailable) == 0 && intOrPercentValue(*ru.MaxSurge) == 0 {
							errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
						}
					}
				default:
					errs = append(errs, field.NotSupported(p.Child("strategy", "type"), d.Spec.Strategy.Type, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.Immutable(obj.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector, field.NewPath("spec", "selector"))
			},
		},
	}, field.NewPath("spec", "template"), deploymentTemplate)
}

func deploymentTemplate(obj runtime.Object) *corev1.PodTemplateSpec {
	return &obj.(*appsv1.Deployment).Spec.Template
}

// intOrPercentValue is upstream's getIntOrPercentValue: the number, with or without "%".
func intOrPercentValue(v intstr.IntOrString) int {
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n
}
