package tableconvert

import (
	"time"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The APIService printer, as kube-aggregator 1.33's.
func init() {
	register(&apiregistration.APIServiceList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Service", "string", "The reference to the service that hosts this API endpoint."),
		col("Available", "string", "Whether this service is available."),
		ageColumn(),
	}, func(a *apiregistration.APIService, now time.Time) ([]any, []metav1.TableRowCondition) {
		service := "Local"
		if s := a.Spec.Service; s != nil {
			service = s.Namespace + "/" + s.Name
		}
		status := string(apiregistration.ConditionUnknown)
		if c := a.Status.Condition(apiregistration.Available); c != nil {
			status = string(c.Status)
			if c.Status != apiregistration.ConditionTrue && c.Reason != "" {
				status += " (" + c.Reason + ")"
			}
		}
		return []any{a.Name, service, status, age(a.CreationTimestamp, now)}, nil
	})
}
