package tableconvert

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The autoscaling printers, as upstream's printHorizontalPodAutoscaler (which prints the
// internal version; v1 objects are printed through their v2 fields).
func init() {
	specDocs, statusDocs := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc(), autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()
	columns := []metav1.TableColumnDefinition{
		nameColumn(),
		col("Reference", "string", specDocs["scaleTargetRef"]),
		col("Targets", "string", specDocs["metrics"]),
		col("MinPods", "string", specDocs["minReplicas"]),
		col("MaxPods", "string", specDocs["maxReplicas"]),
		col("Replicas", "string", statusDocs["currentReplicas"]),
		ageColumn(),
	}
	register(&autoscalingv2.HorizontalPodAutoscalerList{}, columns, hpaRow)
	register(&autoscalingv1.HorizontalPodAutoscalerList{}, columns, func(h *autoscalingv1.HorizontalPodAutoscaler, now time.Time) ([]any, []metav1.TableRowCondition) {
		return hpaRow(hpaV1AsV2(h), now)
	})
}

func hpaRow(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) ([]any, []metav1.TableRowCondition) {
	minPods := "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = fmt.Sprintf("%d", *h.Spec.MinReplicas)
	}
	return []any{h.Name, h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, formatHPAMetrics(h.Spec.Metrics, h.Status.CurrentMetrics),
		minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), age(h.CreationTimestamp, now)}, nil
}

// hpaV1AsV2 is what the printer needs of an autoscaling/v1 object in v2 terms: the CPU target
// and the other metrics from upstream's round-trip annotations.
func hpaV1AsV2(h *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: h.ObjectMeta}
	out.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference(h.Spec.ScaleTargetRef)
	out.Spec.MinReplicas, out.Spec.MaxReplicas = h.Spec.MinReplicas, h.Spec.MaxReplicas
	out.Status.CurrentReplicas = h.Status.CurrentReplicas
	_ = json.Unmarshal([]byte(h.Annotations["autoscaling.alpha.kubernetes.io/metrics"]), &out.Spec.Metrics)
	_ = json.Unmarshal([]byte(h.Annotations["autoscaling.alpha.kubernetes.io/current-metrics"]), &out.Status.CurrentMetrics)
	if h.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: h.Spec.TargetCPUUtilizationPercentage}}})
		if len(out.Status.CurrentMetrics) == 0 && h.Status.CurrentCPUUtilizationPercentage != nil {
			out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(out.Spec.Metrics))
			out.Status.CurrentMetrics[len(out.Spec.Metrics)-1] = autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: h.Status.CurrentCPUUtilizationPercentage}}}
		}
	}
	return out
}

// formatHPAMetrics is upstream's: "cpu: 40%/80%", at most two metrics then "+ N more...".
func formatHPAMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if len(statuses) > i {
			st = &statuses[i]
		}
		list = append(list, formatHPAMetric(spec, st))
	}
	if len(list) > 2 {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:2], ", "), len(list)-2)
	}
	return strings.Join(list, ", ")
}

func formatHPAMetric(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	current := "<unknown>"
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			break
		}
		if t := spec.External.Target; t.AverageValue != nil {
			if st != nil && st.External != nil && st.External.Current.AverageValue != nil {
				current = st.External.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String())
		}
		if st != nil && st.External != nil && st.External.Current.Value != nil {
			current = st.External.Current.Value.String()
		}
		return fmt.Sprintf("%s/%s", current, quantityString(spec.External.Target.Value))
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			break
		}
		if st != nil && st.Pods != nil && st.Pods.Current.AverageValue != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, quantityString(spec.Pods.Target.AverageValue))
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			break
		}
		if t := spec.Object.Target; t.AverageValue != nil {
			if st != nil && st.Object != nil && st.Object.Current.AverageValue != nil {
				current = st.Object.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String())
		}
		if st != nil && st.Object != nil && st.Object.Current.Value != nil {
			current = st.Object.Current.Value.String()
		}
		return fmt.Sprintf("%s/%s", current, quantityString(spec.Object.Target.Value))
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return string(spec.Resource.Name) + ": " + formatResourceTarget(spec.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return string(spec.ContainerResource.Name) + ": " + formatResourceTarget(spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

func formatResourceTarget(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + t.AverageValue.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	target := "<auto>"
	if t.AverageUtilization != nil {
		target = fmt.Sprintf("%d%%", *t.AverageUtilization)
	}
	return current + "/" + target
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "<nil>"
	}
	return q.String()
}
