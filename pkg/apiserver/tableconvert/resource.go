package tableconvert

import (
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers of resource.k8s.io (dynamic resource allocation), as kube-apiserver 1.37's.
func init() {
	register(&resourcev1.DeviceClassList{}, []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
		func(c *resourcev1.DeviceClass, now time.Time) ([]any, []metav1.TableRowCondition) {
			return []any{c.Name, age(c.CreationTimestamp, now)}, nil
		})
	register(&resourcev1.ResourceClaimList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."),
		ageColumn(),
	}, func(c *resourcev1.ResourceClaim, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{c.Name, resourceClaimState(c), age(c.CreationTimestamp, now)}, nil
	})
	register(&resourcev1.ResourceClaimTemplateList{}, []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
		func(t *resourcev1.ResourceClaimTemplate, now time.Time) ([]any, []metav1.TableRowCondition) {
			return []any{t.Name, age(t.CreationTimestamp, now)}, nil
		})
	sliceDocs := resourcev1.ResourceSliceSpec{}.SwaggerDoc()
	register(&resourcev1.ResourceSliceList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Node", "string", sliceDocs["nodeName"]),
		col("Driver", "string", sliceDocs["driver"]),
		col("Pool", "string", resourcev1.ResourcePool{}.SwaggerDoc()["name"]),
		ageColumn(),
	}, func(s *resourcev1.ResourceSlice, now time.Time) ([]any, []metav1.TableRowCondition) {
		node := ""
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		return []any{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, age(s.CreationTimestamp, now)}, nil
	})
	taintDocs := resourcev1.DeviceTaint{}.SwaggerDoc()
	register(&resourcev1.DeviceTaintRuleList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Key", "string", taintDocs["key"]),
		col("Value", "string", taintDocs["value"]),
		col("Effect", "string", taintDocs["effect"]),
		col("TimeAdded", "string", taintDocs["timeAdded"]),
		ageColumn(),
	}, func(r *resourcev1.DeviceTaintRule, now time.Time) ([]any, []metav1.TableRowCondition) {
		added := ""
		if t := r.Spec.Taint.TimeAdded; t != nil {
			added = age(*t, now)
		}
		t := r.Spec.Taint
		return []any{r.Name, t.Key, t.Value, string(t.Effect), added, age(r.CreationTimestamp, now)}, nil
	})
}

// resourceClaimState is upstream's: deleted, pending, allocated, reserved, comma-separated.
func resourceClaimState(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	if c.Status.Allocation == nil {
		if c.DeletionTimestamp == nil {
			states = append(states, "pending")
		}
	} else {
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	}
	return strings.Join(states, ",")
}
