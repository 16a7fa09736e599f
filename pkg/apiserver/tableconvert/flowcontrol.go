package tableconvert

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers of flowcontrol.apiserver.k8s.io, as kube-apiserver 1.33's.
func init() {
	fsDocs := flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()
	register(&flowcontrolv1.FlowSchemaList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
		col("MatchingPrecedence", "string", fsDocs["matchingPrecedence"]),
		col("DistinguisherMethod", "string", fsDocs["distinguisherMethod"]),
		ageColumn(),
		col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
	}, func(fs *flowcontrolv1.FlowSchema, now time.Time) ([]any, []metav1.TableRowCondition) {
		method := "<none>"
		if fs.Spec.DistinguisherMethod != nil {
			method = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, age(fs.CreationTimestamp, now), missing}, nil
	})

	qDocs := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	register(&flowcontrolv1.PriorityLevelConfigurationList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
		col("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
		col("Queues", "string", qDocs["queues"]),
		col("HandSize", "string", qDocs["handSize"]),
		col("QueueLengthLimit", "string", qDocs["queueLengthLimit"]),
		ageColumn(),
	}, func(p *flowcontrolv1.PriorityLevelConfiguration, now time.Time) ([]any, []metav1.TableRowCondition) {
		var ncs, queues, hand, qlen any = "<none>", "<none>", "<none>", "<none>"
		if l := p.Spec.Limited; l != nil {
			if l.NominalConcurrencyShares != nil {
				ncs = int64(*l.NominalConcurrencyShares)
			}
			if q := l.LimitResponse.Queuing; q != nil {
				queues, hand, qlen = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return []any{p.Name, string(p.Spec.Type), ncs, queues, hand, qlen, age(p.CreationTimestamp, now)}, nil
	})
}
