package workloads

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func StatefulSetsKind() *registry.Kind {
	return core.WithTemplateInitResizePolicy(&registry.Kind{
		Names: registry.Names{Group: "apps", Version: "v1", Kind: "StatefulSet", ListKind: "StatefulSetList", Plural: "statefulsets", Singular: "statefulset",
			ShortNames: []string{"sts"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &appsv1.StatefulSet{} },
		NewList: func() runtime.Object { return &appsv1.StatefulSetList{} },
		Status:  true,
		Scale: &registry.ScaleAccessor{
			Replicas:       func(obj runtime.Object) int32 { return registry.ReplicasOr1(obj.(*appsv1.StatefulSet).Spec.Replicas) },
			SetReplicas:    func(obj runtime.Object, n int32) { obj.(*appsv1.StatefulSet).Spec.Replicas = &n },
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.StatefulSet).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return registry.LabelSelectorString(obj.(*appsv1.StatefulSet).Spec.Selector)
			},
		},
		Strategy: registry.Strategy{
			PrepareForUpdate:       registry.Rule(func(sts, old *appsv1.StatefulSet) { sts.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(sts, old *appsv1.StatefulSet) { sts.Spec = old.Spec }),
			SpecChanged:            registry.Changed(func(sts *appsv1.StatefulSet) appsv1.StatefulSetSpec { return sts.Spec }),
			NameValidation:         apivalidation.NameIsDNSLabel,
			PrepareForCreate:       func(obj runtime.Object) { obj.(*appsv1.StatefulSet).Status = appsv1.StatefulSetStatus{} },
			Default:                defaultStatefulSet,
			Validate:               validateStatefulSet,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				sts, oldSts := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
				clone := sts.Spec.DeepCopy()
				clone.Replicas = oldSts.Spec.Replicas
				clone.Template = oldSts.Spec.Template
				clone.UpdateStrategy = oldSts.Spec.UpdateStrategy
				clone.MinReadySeconds = oldSts.Spec.MinReadySeconds
				clone.Ordinals = oldSts.Spec.Ordinals
				clone.RevisionHistoryLimit = oldSts.Spec.RevisionHistoryLimit
				clone.PersistentVolumeClaimRetentionPolicy = oldSts.Spec.PersistentVolumeClaimRetentionPolicy
				if !apiequality.Semantic.DeepEqual(*clone, oldSts.Spec) {
					return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
				}
				return nil
			},
		},
	}, field.NewPath("spec", "template"),
		func(obj runtime.Object) *corev1.PodTemplateSpec {
			o := obj.(*appsv1.StatefulSet)
			return &o.Spec.Template
		})
}

// defaultStatefulSet is upstream's SetDefaults_StatefulSet with 1.37's feature gates
// (MaxUnavailableStatefulSet on: a rolling update's maxUnavailable defaults to 1).
func defaultStatefulSet(obj runtime.Object) {
	sts := obj.(*appsv1.StatefulSet)
	s := &sts.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := s.UpdateStrategy.RollingUpdate; s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		if ru.Partition == nil {
			ru.Partition = registry.Int32Ptr(0)
		}
		if ru.MaxUnavailable == nil {
			one := intstr.FromInt32(1)
			ru.MaxUnavailable = &one
		}
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		s.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Replicas == nil {
		s.Replicas = registry.Int32Ptr(1)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = registry.Int32Ptr(10)
	}
	core.DefaultPodSpec(&s.Template.Spec)
	for i := range s.VolumeClaimTemplates {
		s.VolumeClaimTemplates[i].APIVersion, s.VolumeClaimTemplates[i].Kind = "v1", "PersistentVolumeClaim"
		core.DefaultPVCSpec(&s.VolumeClaimTemplates[i].Spec)
		if s.VolumeClaimTemplates[i].Status.Phase == "" {
			s.VolumeClaimTemplates[i].Status.Phase = "Pending"
		}
	}
}

// validateStatefulSet follows upstream's ValidateStatefulSetSpec, which since 1.37 checks the
// template's pod spec too (1.33 checked only its labels and annotations).
func validateStatefulSet(obj runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.StatefulSet).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	switch s.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), s.PodManagementPolicy, "must be 'OrderedReady' or 'Parallel'"))
	}
	switch s.UpdateStrategy.Type {
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, registry.ValidateNonnegative(s.UpdateStrategy.RollingUpdate.Partition, p.Child("updateStrategy", "rollingUpdate", "partition"))...)
		}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(p.Child("updateStrategy", "rollingUpdate"), s.UpdateStrategy.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("updateStrategy"), s.UpdateStrategy, "must be 'RollingUpdate' or 'OnDelete'"))
	}
	if pol := s.PersistentVolumeClaimRetentionPolicy; pol != nil {
		pp := p.Child("persistentVolumeClaimRetentionPolicy")
		for _, f := range []struct {
			name string
			v    appsv1.PersistentVolumeClaimRetentionPolicyType
		}{{"whenDeleted", pol.WhenDeleted}, {"whenScaled", pol.WhenScaled}} {
			if f.v != appsv1.RetainPersistentVolumeClaimRetentionPolicyType && f.v != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				errs = append(errs, field.NotSupported(pp.Child(f.name), f.v, []string{"Retain", "Delete"}))
			}
		}
	}
	errs = append(errs, registry.ValidateNonnegative(s.Replicas, p.Child("replicas"))...)
	errs = append(errs, registry.ValidateNonnegative(&s.MinReadySeconds, p.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		errs = append(errs, registry.ValidateNonnegative(&s.Ordinals.Start, p.Child("ordinals.start"))...)
	}
	if s.ServiceName != "" {
		for _, msg := range utilvalidation.IsDNS1123Label(s.ServiceName) {
			errs = append(errs, field.Invalid(p.Child("serviceName"), s.ServiceName, msg))
		}
	}
	var sel labels.Selector
	if s.Selector == nil {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	} else {
		var selErrs field.ErrorList
		sel, selErrs = validateWorkloadSelector(s.Selector, p.Child("selector"), "statefulset")
		errs = append(errs, selErrs...)
	}
	t := p.Child("template")
	// The pods get a volume per claim template, so mounts may name them.
	tmpl := s.Template.DeepCopy()
	for _, c := range s.VolumeClaimTemplates {
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	errs = append(errs, core.ValidatePodTemplate(tmpl, sel, t)...)
	return append(errs, core.ValidateAlwaysRestartTemplate(&s.Template, "StatefulSet", t)...)
}
