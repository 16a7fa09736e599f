package admissionregistration

import (
	"github.com/hacp/hacp/pkg/apiserver/admission/matchconditions"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Webhook configurations are stored and served; calling the webhooks is admission's job.
func ValidatingWebhookConfigurationsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration", ListKind: "ValidatingWebhookConfigurationList",
			Plural: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration", Categories: []string{"api-extensions"}},
		New:     func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Strategy: registry.Strategy{
			// Any change of the webhooks starts a new generation, as upstream.
			SpecChanged: registry.Changed(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) []admissionregistrationv1.ValidatingWebhook {
				return c.Webhooks
			}),
			Default: func(obj runtime.Object) {
				for i := range obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks {
					w := &obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[i]
					defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				var errs field.ErrorList
				names := map[string]bool{}
				for i, w := range obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks {
					errs = append(errs, validateWebhook(w.Name, names, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, field.NewPath("webhooks").Index(i))...)
					errs = append(errs, matchconditions.Validate(w.MatchConditions, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
				}
				return errs
			},
		},
	}
}
