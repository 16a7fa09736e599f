package tableconvert

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers of scheduling.k8s.io, node.k8s.io and events.k8s.io, as kube-apiserver 1.33's.
func init() {
	pcDocs := schedulingv1.PriorityClass{}.SwaggerDoc()
	register(&schedulingv1.PriorityClassList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Value", "integer", pcDocs["value"]),
		col("Global-Default", "boolean", pcDocs["globalDefault"]),
		ageColumn(),
		col("PreemptionPolicy", "string", pcDocs["preemptionPolicy"]),
	}, func(pc *schedulingv1.PriorityClass, now time.Time) ([]any, []metav1.TableRowCondition) {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}, nil
	})

	register(&nodev1.RuntimeClassList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Handler", "string", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]),
		ageColumn(),
	}, func(rc *nodev1.RuntimeClass, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{rc.Name, rc.Handler, age(rc.CreationTimestamp, now)}, nil
	})

	// events.k8s.io events print as the core events they are.
	register(&eventsv1.EventList{}, eventColumns(), func(ev *eventsv1.Event, now time.Time) ([]any, []metav1.TableRowCondition) {
		core := &corev1.Event{
			ObjectMeta: ev.ObjectMeta, InvolvedObject: ev.Regarding, Reason: ev.Reason, Message: ev.Note, Source: ev.DeprecatedSource,
			FirstTimestamp: ev.DeprecatedFirstTimestamp, LastTimestamp: ev.DeprecatedLastTimestamp, Count: ev.DeprecatedCount, Type: ev.Type,
			EventTime: ev.EventTime, Action: ev.Action, Related: ev.Related, ReportingController: ev.ReportingController, ReportingInstance: ev.ReportingInstance,
		}
		if ev.Series != nil {
			core.Series = &corev1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
		}
		return eventRow(core, now)
	})
}
