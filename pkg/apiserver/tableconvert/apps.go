package tableconvert

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The apps/v1 workload printers besides Deployment's, as upstream's printReplicaSet,
// printStatefulSet, printDaemonSet and printControllerRevision.
func init() {
	containersCol := wide("Containers", "string", "Names of each container in the template.")
	imagesCol := wide("Images", "string", "Images referenced by each container in the template.")

	rsSpec, rsStatus := appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc()
	register(&appsv1.ReplicaSetList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Desired", "integer", rsSpec["replicas"]),
		col("Current", "integer", rsStatus["replicas"]),
		col("Ready", "integer", rsStatus["readyReplicas"]),
		ageColumn(),
		containersCol, imagesCol,
		wide("Selector", "string", rsSpec["selector"]),
	}, func(rs *appsv1.ReplicaSet, now time.Time) ([]any, []metav1.TableRowCondition) {
		names, images := containerNamesImages(rs.Spec.Template.Spec.Containers)
		return []any{rs.Name, int64(derefInt32(rs.Spec.Replicas, 1)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}, nil
	})

	register(&appsv1.StatefulSetList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Ready", "string", "Number of the pod with ready state"),
		ageColumn(),
		containersCol, imagesCol,
	}, func(sts *appsv1.StatefulSet, now time.Time) ([]any, []metav1.TableRowCondition) {
		names, images := containerNamesImages(sts.Spec.Template.Spec.Containers)
		return []any{sts.Name, fmt.Sprintf("%d/%d", sts.Status.ReadyReplicas, derefInt32(sts.Spec.Replicas, 1)),
			age(sts.CreationTimestamp, now), names, images}, nil
	})

	dsStatus := appsv1.DaemonSetStatus{}.SwaggerDoc()
	register(&appsv1.DaemonSetList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Desired", "integer", dsStatus["desiredNumberScheduled"]),
		col("Current", "integer", dsStatus["currentNumberScheduled"]),
		col("Ready", "integer", dsStatus["numberReady"]),
		col("Up-to-date", "integer", dsStatus["updatedNumberScheduled"]),
		col("Available", "integer", dsStatus["numberAvailable"]),
		col("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn(),
		containersCol, imagesCol,
		wide("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]),
	}, func(ds *appsv1.DaemonSet, now time.Time) ([]any, []metav1.TableRowCondition) {
		names, images := containerNamesImages(ds.Spec.Template.Spec.Containers)
		s := ds.Status
		return []any{ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
			int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			age(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector)}, nil
	})

	register(&appsv1.ControllerRevisionList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Controller", "string", "Controller of the object"),
		col("Revision", "string", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
		ageColumn(),
	}, func(cr *appsv1.ControllerRevision, now time.Time) ([]any, []metav1.TableRowCondition) {
		controller := "<none>"
		if ref := metav1.GetControllerOf(cr); ref != nil {
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
				controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
			}
		}
		return []any{cr.Name, controller, cr.Revision, age(cr.CreationTimestamp, now)}, nil
	})
}

func derefInt32(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
