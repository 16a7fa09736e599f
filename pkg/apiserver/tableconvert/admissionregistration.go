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
		col("ParamRef", "string", "ParamRef indicates the param resource which sets the configuration param"),
		ageColumn(),
	}, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), age(b.CreationTimestamp, now)}, nil
	})
	register(&admissionregistrationv1.MutatingAdmissionPolicyList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Mutations", "integer", "Mutation indicates the number of mutations rules defined in this configuration"),
		col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
		ageColumn(),
	}, func(p *admissionregistrationv1.MutatingAdmissionPolicy, now time.Time) ([]any, []metav1.TableRowCondition) {
		paramKind := "<unset>"
		if k := p.Spec.ParamKind; k != nil {
			paramKind = k.APIVersion + "/" + k.Kind
		}
		return []any{p.Name, int64(len(p.Spec.Mutations)), paramKind, age(p.CreationTimestamp, now)}, nil
	})
	register(&admissionregistrationv1.MutatingAdmissionPolicyBindingList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
		col("ParamRef", "string", "ParamRef indicates the param resource which sets the configuration param"),
		ageColumn(),
	}, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), age(b.CreationTimestamp, now)}, nil
	})
}

// paramRefCell is how upstream prints a policy binding's paramRef.
func paramRefCell(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name // a param without a namespace may be cluster-scoped or in any
	case pr.Selector != nil:
		return pr.Selector.String()
	}
	return "<unset>"
}
