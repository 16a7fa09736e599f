package tableconvert

import (
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	// apiextensions-apiserver 1.37's CRD table (pkg/registry/customresourcedefinition/tableconvertor).
	register(&apiextensionsv1.CustomResourceDefinitionList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Scope", "string", "Cluster/Namespaced"),
		col("Versions", "string", "Served versions"),
		{Name: "Created At", Type: "date", Description: objectMetaDocs["creationTimestamp"]},
		wide("Group", "string", "API group"),
		wide("Kind", "string", "CustomResource kind"),
		wide("ShortNames", "string", "Short names"),
		wide("Established", "boolean", "Established status"),
	}, func(c *apiextensionsv1.CustomResourceDefinition, _ time.Time) ([]any, []metav1.TableRowCondition) {
		var versions []string
		for _, v := range c.Spec.Versions {
			if v.Served {
				label := v.Name
				if v.Storage {
					label += "(storage)"
				}
				versions = append(versions, label)
			}
		}
		sort.Strings(versions)
		established := false
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		return []any{c.Name, string(c.Spec.Scope), strings.Join(versions, ","), createdAt(c.CreationTimestamp),
			c.Spec.Group, c.Spec.Names.Kind, strings.Join(c.Spec.Names.ShortNames, ","), established}, nil
	})
}
