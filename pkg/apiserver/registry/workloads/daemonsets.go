package workloads

import (
	"strconv"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func DaemonSetsKind() *registry.Kind {
	return core.WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Group: "apps", Version: "v1", Kind: "DaemonSet", ListKind: "DaemonSetList", Plural: "daemonsets", Singular: "daemonset",
			ShortNames: []string{"ds"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &appsv1.DaemonSet{} },
		NewList: func() runtime.Object { return &appsv1.DaemonSetList{} },
		Status:  true,
		Strategy: registry.Strategy{
			SpecChanged: registry.Changed(func(ds *appsv1.DaemonSet) appsv1.DaemonSetSpec { return ds.Spec }),
			PrepareForCreate: func(obj runtime.Object) {
				ds := obj.(*appsv1.DaemonSet)
				ds.Status = appsv1.DaemonSetStatus{}
				if templateGeneration(ds) < 1 {
					setTemplateGeneration(ds, 1)
				}
			},
			// The template generation is the server's: kept, and bumped when the template changes.
			PrepareForUpdate: registry.Rule(func(ds, old *appsv1.DaemonSet) {
				ds.Status = old.Status
				gen := templateGeneration(old)
				if !apiequality.Semantic.DeepEqual(ds.Spec.Template, old.Spec.Template) {
					gen++
				}
				setTemplateGeneration(ds, gen)
			}),
			// The template generation (upstream's spec.templateGeneration, an annotation in
			// apps/v1) belongs to the spec a status write keeps.
			PrepareForStatusUpdate: registry.Rule(func(ds, old *appsv1.DaemonSet) {
				ds.Spec = old.Spec
				setTemplateGeneration(ds, templateGeneration(old))
			}),
			Default: func(obj runtime.Object) {
				s := &obj.(*appsv1.DaemonSet).Spec
				if s.UpdateStrategy.Type == "" {
					s.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
				}
				if s.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
					if s.UpdateStrategy.RollingUpdate == nil {
						s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
					}
					ru := s.UpdateStrategy.RollingUpdate
					ru.MaxUnavailable = registry.DefaultIntOrString(ru.MaxUnavailable, intstr.FromInt32(1))
					ru.MaxSurge = registry.DefaultIntOrString(ru.MaxSurge, intstr.FromInt32(0))
				}
				if s.RevisionHistoryLimit == nil {
					s.RevisionHistoryLimit = registry.Int32Ptr(10)
				}
				core.DefaultPodSpec(&s.Template.Spec)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*appsv1.DaemonSet).Spec
				p := field.NewPath("spec")
				sel, errs := validateWorkloadSelector(s.Selector, p.Child("selector"), "daemonset")
				errs = append(errs, core.ValidatePodTemplate(&s.Template, sel, p.Child("template"))...)
				errs = append(errs, core.ValidateAlwaysRestartTemplate(&s.Template, "DaemonSet", p.Child("template"))...)
				errs = append(errs, registry.ValidateNonnegative(&s.MinReadySeconds, p.Child("minReadySeconds"))...)
				errs = append(errs, registry.ValidateNonnegative(s.RevisionHistoryLimit, p.Child("revisionHistoryLimit"))...)
				switch s.UpdateStrategy.Type {
				case appsv1.OnDeleteDaemonSetStrategyType:
				case appsv1.RollingUpdateDaemonSetStrategyType:
					if s.UpdateStrategy.RollingUpdate == nil {
						errs = append(errs, field.Required(p.Child("updateStrategy", "rollingUpdate"), ""))
					}
				default:
					errs = append(errs, field.NotSupported(p.Child("updateStrategy"), s.UpdateStrategy, []string{string(appsv1.OnDeleteDaemonSetStrategyType), string(appsv1.RollingUpdateDaemonSetStrategyType)}))
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return registry.Immutable(obj.(*appsv1.DaemonSet).Spec.Selector, old.(*appsv1.DaemonSet).Spec.Selector, field.NewPath("spec", "selector"))
			},
		},
	}, field.NewPath("spec", "template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec {
			o := obj.(*appsv1.DaemonSet)
			return &o.Spec.Template
		})
}

// templateGenerationAnnotation carries upstream's internal spec.templateGeneration in apps/v1.
const templateGenerationAnnotation = "deprecated.daemonset.template.generation"

func templateGeneration(ds *appsv1.DaemonSet) int64 {
	n, _ := strconv.ParseInt(ds.Annotations[templateGenerationAnnotation], 10, 64)
	return n
}

func setTemplateGeneration(ds *appsv1.DaemonSet, n int64) {
	if n == 0 { // upstream's conversion leaves a zero generation out
		delete(ds.Annotations, templateGenerationAnnotation)
		return
	}
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[templateGenerationAnnotation] = strconv.FormatInt(n, 10)
}
