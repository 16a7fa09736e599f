package tableconvert

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The policy/v1 printer, as upstream's printPodDisruptionBudget.
func init() {
	register(&policyv1.PodDisruptionBudgetList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Min Available", "string", "The minimum number of pods that must be available."),
		col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
		col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
		ageColumn(),
	}, func(pdb *policyv1.PodDisruptionBudget, now time.Time) ([]any, []metav1.TableRowCondition) {
		minAvailable, maxUnavailable := "N/A", "N/A"
		if pdb.Spec.MinAvailable != nil {
			minAvailable = pdb.Spec.MinAvailable.String()
		}
		if pdb.Spec.MaxUnavailable != nil {
			maxUnavailable = pdb.Spec.MaxUnavailable.String()
		}
		return []any{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp, now)}, nil
	})
}
