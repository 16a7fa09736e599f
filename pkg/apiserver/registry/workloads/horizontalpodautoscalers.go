package workloads

import (
	"encoding/json"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// HorizontalPodAutoscalers are served at autoscaling/v2 (preferred, the stored version) and
// at autoscaling/v1, converted by hand as upstream's pkg/apis/autoscaling/v1 does: v1 has one
// CPU target; the other metrics, the behavior, the current metrics and the conditions
// travel in upstream's round-trip annotations (as their autoscaling/v2 JSON).
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

func hpaNames(version string) registry.Names {
	return registry.Names{Group: "autoscaling", Version: version, Kind: "HorizontalPodAutoscaler", ListKind: "HorizontalPodAutoscalerList",
		Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler", ShortNames: []string{"hpa"}, Categories: []string{"all"}, Namespaced: true}
}

func HorizontalPodAutoscalersKind() *registry.Kind {
	return &registry.Kind{
		Names:   hpaNames("v2"),
		New:     func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewList: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*autoscalingv2.HorizontalPodAutoscaler).Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
			},
			PrepareForUpdate:       registry.Rule(func(hpa, old *autoscalingv2.HorizontalPodAutoscaler) { hpa.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(hpa, old *autoscalingv2.HorizontalPodAutoscaler) { hpa.Spec = old.Spec }),
			// metadata.generation counts spec changes since 1.37 (HPAGeneration, on by default).
			SpecChanged: registry.Changed(func(hpa *autoscalingv2.HorizontalPodAutoscaler) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpa.Spec
			}),
			Default: func(obj runtime.Object) { defaultHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler)) },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler))
			},
		},
	}
}

func HorizontalPodAutoscalersV1Kind() *registry.Kind {
	return &registry.Kind{
		Names:   hpaNames("v1"),
		New:     func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
		NewList: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
		Status:  true,
		StorageOf: &registry.Conversion{
			StorageNew:     func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			StorageNewList: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
			ToStorage:      func(obj runtime.Object) runtime.Object { return hpaToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler)) },
			FromStorage:    func(obj runtime.Object) runtime.Object { return hpaToV1(obj.(*autoscalingv2.HorizontalPodAutoscaler)) },
		},
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				hpa := obj.(*autoscalingv1.HorizontalPodAutoscaler)
				hpa.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
				delete(hpa.Annotations, hpaCurrentMetricsAnnotation)
				delete(hpa.Annotations, hpaConditionsAnnotation)
			},
			// v2's status and spec fields that v1 lacks travel in annotations: they belong
			// to the status and the spec the rules keep, as upstream's conversion makes them.
			PrepareForUpdate: registry.Rule(func(hpa, old *autoscalingv1.HorizontalPodAutoscaler) {
				hpa.Status = old.Status
				keepAnnotations(&hpa.ObjectMeta, &old.ObjectMeta, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation)
			}),
			PrepareForStatusUpdate: registry.Rule(func(hpa, old *autoscalingv1.HorizontalPodAutoscaler) {
				hpa.Spec = old.Spec
				keepAnnotations(&hpa.ObjectMeta, &old.ObjectMeta, hpaMetricsAnnotation, hpaBehaviorAnnotation)
			}),
			// The generation counts the v2 spec: v1's and the annotations that carry the rest.
			SpecChanged: registry.Changed(func(hpa *autoscalingv1.HorizontalPodAutoscaler) [3]any {
				return [3]any{hpa.Spec, hpa.Annotations[hpaMetricsAnnotation], hpa.Annotations[hpaBehaviorAnnotation]}
			}),
			Default: func(obj runtime.Object) {
				hpa := obj.(*autoscalingv1.HorizontalPodAutoscaler)
				if hpa.Spec.MinReplicas == nil {
					hpa.Spec.MinReplicas = registry.Int32Ptr(1)
				}
			},
			// The rules are v2's, on the object as it will be stored.
			Validate: func(obj runtime.Object) field.ErrorList {
				v2 := hpaToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
				defaultHPA(v2)
				return validateHPA(v2)
			},
		},
	}
}

// defaultHPA is upstream's autoscaling/v2 SetDefaults_HorizontalPodAutoscaler.
func defaultHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = registry.Int32Ptr(1)
	}
	if len(hpa.Spec.Metrics) == 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{defaultCPUMetric()}
	}
	if b := hpa.Spec.Behavior; b != nil {
		maxPolicy := autoscalingv2.MaxChangePolicySelect
		up := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: registry.Int32Ptr(0), SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}}
		down := &autoscalingv2.HPAScalingRules{SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}}
		b.ScaleUp = mergeScalingRules(b.ScaleUp, up)
		b.ScaleDown = mergeScalingRules(b.ScaleDown, down)
	}
}

func defaultCPUMetric() autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: registry.Int32Ptr(80)}}}
}

// mergeScalingRules is upstream's copyHPAScalingRules: what from sets wins over the defaults.
func mergeScalingRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}

// validateHPA follows upstream's validateHorizontalPodAutoscalerSpec (metric sources are
// checked for their type and target, not field by field).
func validateHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	p := field.NewPath("spec")
	s := &hpa.Spec
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
	}
	if s.MaxReplicas < 0 {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than 0"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	if s.MaxReplicas == 0 {
		// 1.37's declarative validation (+k8s:required), after the hand-written rules.
		errs = append(errs, field.Required(p.Child("maxReplicas"), ""))
	}
	ref := p.Child("scaleTargetRef")
	for _, f := range []struct{ name, v string }{{"kind", s.ScaleTargetRef.Kind}, {"name", s.ScaleTargetRef.Name}} {
		if f.v == "" {
			errs = append(errs, field.Required(ref.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.v) {
			errs = append(errs, field.Invalid(ref.Child(f.name), f.v, msg))
		}
	}
	valid := []string{string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
		string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType)}
	for i, m := range s.Metrics {
		mp := p.Child("metrics").Index(i)
		switch m.Type {
		case "":
			errs = append(errs, field.Required(mp.Child("type"), "must specify a metric source type"))
		case autoscalingv2.ResourceMetricSourceType:
			if m.Resource == nil {
				errs = append(errs, field.Required(mp.Child("resource"), "must populate information for the given metric source"))
			} else if u := m.Resource.Target.AverageUtilization; u != nil && *u < 1 {
				errs = append(errs, field.Invalid(mp.Child("resource", "target", "averageUtilization"), u, "must be greater than 0"))
			}
		case autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType, autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType:
		default:
			errs = append(errs, field.NotSupported(mp.Child("type"), m.Type, valid))
		}
	}
	if b := s.Behavior; b != nil {
		for _, r := range []struct {
			name  string
			rules *autoscalingv2.HPAScalingRules
		}{{"scaleUp", b.ScaleUp}, {"scaleDown", b.ScaleDown}} {
			if r.rules == nil {
				continue
			}
			rp := p.Child("behavior", r.name)
			if w := r.rules.StabilizationWindowSeconds; w != nil && *w < 0 {
				errs = append(errs, field.Invalid(rp.Child("stabilizationWindowSeconds"), w, "must be greater than or equal to zero"))
			}
			for j, pol := range r.rules.Policies {
				pp := rp.Child("policies").Index(j)
				if pol.Value <= 0 {
					errs = append(errs, field.Invalid(pp.Child("value"), pol.Value, "must be greater than zero"))
				}
				if pol.PeriodSeconds <= 0 {
					errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
				}
			}
		}
	}
	return errs
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// hpaToV1 converts a stored autoscaling/v2 object to autoscaling/v1.
func hpaToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{TypeMeta: in.TypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion = "autoscaling/v1"
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	var others []autoscalingv2.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) && out.Spec.TargetCPUUtilizationPercentage == nil {
			v := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &v
			continue
		}
		others = append(others, m)
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			v := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &v
			break
		}
	}
	dropHPAAnnotations(out)
	setJSONAnnotation(out, hpaMetricsAnnotation, others, len(others) > 0)
	setJSONAnnotation(out, hpaCurrentMetricsAnnotation, in.Status.CurrentMetrics, len(in.Status.CurrentMetrics) > 0)
	setJSONAnnotation(out, hpaBehaviorAnnotation, in.Spec.Behavior, in.Spec.Behavior != nil)
	setJSONAnnotation(out, hpaConditionsAnnotation, in.Status.Conditions, len(in.Status.Conditions) > 0)
	return out
}

// hpaToV2 converts an autoscaling/v1 object to the stored autoscaling/v2.
func hpaToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: in.TypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion = "autoscaling/v2"
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
	}
	a := in.Annotations
	_ = json.Unmarshal([]byte(a[hpaMetricsAnnotation]), &out.Spec.Metrics)
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		cpu := defaultCPUMetric()
		v := *in.Spec.TargetCPUUtilizationPercentage
		cpu.Resource.Target.AverageUtilization = &v
		out.Spec.Metrics = append(out.Spec.Metrics, cpu)
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{defaultCPUMetric()} // v1's implicit default
	}
	if s, ok := a[hpaBehaviorAnnotation]; ok {
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if json.Unmarshal([]byte(s), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = &b
		}
	}
	if s, ok := a[hpaCurrentMetricsAnnotation]; ok {
		_ = json.Unmarshal([]byte(s), &out.Status.CurrentMetrics)
	} else if in.Status.CurrentCPUUtilizationPercentage != nil {
		v := *in.Status.CurrentCPUUtilizationPercentage
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &v}}}}
	}
	if s, ok := a[hpaConditionsAnnotation]; ok {
		_ = json.Unmarshal([]byte(s), &out.Status.Conditions)
	}
	hpaDropAnnotationsV2(out)
	return out
}

func hpaRoundTripAnnotations() []string {
	return []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation}
}

func dropHPAAnnotations(hpa *autoscalingv1.HorizontalPodAutoscaler) {
	for _, k := range hpaRoundTripAnnotations() {
		delete(hpa.Annotations, k)
	}
	if len(hpa.Annotations) == 0 {
		hpa.Annotations = nil
	}
}

func hpaDropAnnotationsV2(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	for _, k := range hpaRoundTripAnnotations() {
		delete(hpa.Annotations, k)
	}
	if len(hpa.Annotations) == 0 {
		hpa.Annotations = nil
	}
}

// keepAnnotations sets obj's annotations of the given keys to old's (removed where old has
// none).
func keepAnnotations(obj, old *metav1.ObjectMeta, keys ...string) {
	for _, k := range keys {
		if v, ok := old.Annotations[k]; ok {
			metav1.SetMetaDataAnnotation(obj, k, v)
		} else {
			delete(obj.Annotations, k)
		}
	}
}

func setJSONAnnotation(hpa *autoscalingv1.HorizontalPodAutoscaler, key string, v any, set bool) {
	if !set {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if hpa.Annotations == nil {
		hpa.Annotations = map[string]string{}
	}
	hpa.Annotations[key] = string(b)
}
