package tableconvert

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers of admissionregistration.k8s.io, as kube-apiserver 1.33's.
func init() {
	register(&admissionregistrationv1.MutatingWebhookConfigurationList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
		ageColumn(),
	}, func(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp, now)}, nil
	})
	register(&admissionregistrationv1.ValidatingWebhookConfigurationList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
		ageColumn(),
	}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp, now)}, nil
	})
	register(&admissionregistrationv1.ValidatingAdmissionPolicyList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
		col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
		ageColumn(),
	}, func(p *admissionregistrationv1.ValidatingAdmissionPolicy, now time.Time) ([]any, []metav1.TableRowCondition) {
		paramKind := "<unset>"
		if k := p.Spec.ParamKind; k != nil {
			paramKind = k.APIVersion + "/" + k.Kind
		}
		return []any{p.Name, int64(len(p.Spec.Validations)), paramKind, age(p.CreationTimestamp, now)}, nil
	})
	register(&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
		col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
		ageColumn(),
	}, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
		param := "<unset>"
		if pr := b.Spec.ParamRef; pr != nil {
			switch {
			case pr.Name != "" && pr.Namespace != "":
				param = pr.Namespace + "/" + pr.Name
			case pr.Name != "":
				param = "*/" + pr.Name
			case pr.Selector != nil:
				param = pr.Selector.String()
			}
		}
		return []any{b.Name, b.Spec.PolicyName, param, age(b.CreationTimestamp, now)}, nil
	})
}
