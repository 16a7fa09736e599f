package tableconvert

import (
	"time"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The StorageVersionMigration printer, as kube-apiserver 1.37's (its name column has no
// "name" format and there is no age column, as upstream's).
func init() {
	register(&storagemigrationv1.StorageVersionMigrationList{}, []metav1.TableColumnDefinition{
		col("Name", "string", metav1.ObjectMeta{}.SwaggerDoc()["name"]),
		col("Resource", "string", "GroupResource to migrate"),
		col("Status", "string", "Status of the migration"),
	}, func(m *storagemigrationv1.StorageVersionMigration, _ time.Time) ([]any, []metav1.TableRowCondition) {
		status := "Unknown"
		for _, c := range m.Status.Conditions {
			if c.Status != metav1.ConditionTrue {
				continue
			}
			switch storagemigrationv1.MigrationConditionType(c.Type) {
			case storagemigrationv1.MigrationRunning, storagemigrationv1.MigrationFailed, storagemigrationv1.MigrationSucceeded:
				status = c.Type
			}
		}
		return []any{m.Name, m.Spec.Resource.String(), status}, nil
	})
}
