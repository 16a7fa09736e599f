package tableconvert

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	// CustomResourceDefinition has no printer upstream: kube-apiserver's default table.
	register(&apiextensionsv1.CustomResourceDefinitionList{}, createdAtColumns(), func(c *apiextensionsv1.CustomResourceDefinition, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{c.Name, createdAt(c.CreationTimestamp)}, nil
	})
}
