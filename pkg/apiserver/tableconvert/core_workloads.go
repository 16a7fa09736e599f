package tableconvert

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The core/v1 workload printers, as upstream's printReplicationController and printPodTemplate.
func init() {
	rcSpec, rcStatus := corev1.ReplicationControllerSpec{}.SwaggerDoc(), corev1.ReplicationControllerStatus{}.SwaggerDoc()
	register(&corev1.ReplicationControllerList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Desired", "integer", rcSpec["replicas"]),
		col("Current", "integer", rcStatus["replicas"]),
		col("Ready", "integer", rcStatus["readyReplicas"]),
		ageColumn(),
		wide("Containers", "string", "Names of each container in the template."),
		wide("Images", "string", "Images referenced by each container in the template."),
		wide("Selector", "string", rcSpec["selector"]),
	}, func(rc *corev1.ReplicationController, now time.Time) ([]any, []metav1.TableRowCondition) {
		var containers []corev1.Container
		if rc.Spec.Template != nil {
			containers = rc.Spec.Template.Spec.Containers
		}
		names, images := containerNamesImages(containers)
		return []any{rc.Name, int64(derefInt32(rc.Spec.Replicas, 0)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			age(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector)}, nil
	})

	register(&corev1.PodTemplateList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Containers", "string", "Names of each container in the template."),
		col("Images", "string", "Images referenced by each container in the template."),
		col("Pod Labels", "string", "The labels for the pod template."),
	}, func(pt *corev1.PodTemplate, _ time.Time) ([]any, []metav1.TableRowCondition) {
		names, images := containerNamesImages(pt.Template.Spec.Containers)
		return []any{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}, nil
	})
}
