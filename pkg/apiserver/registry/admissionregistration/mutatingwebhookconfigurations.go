package admissionregistration

import (
	"github.com/hacp/hacp/pkg/apiserver/admission/matchconditions"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Webhook configurations are stored and served; calling the webhooks is admission's job.
func MutatingWebhookConfigurationsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration", ListKind: "MutatingWebhookConfigurationList",
			Plural: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration", Categories: []string{"api-extensions"}},
		New:     func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		NewList: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		Strategy: registry.Strategy{
			// Any change of the webhooks starts a new generation, as upstream.
			SpecChanged: registry.Changed(func(c *admissionregistrationv1.MutatingWebhookConfiguration) []admissionregistrationv1.MutatingWebhook {
				return c.Webhooks
			}),
			Default: func(obj runtime.Object) {
				for i := range obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
					w := &obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks[i]
					defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
					registry.SetDefault(&w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				var errs field.ErrorList
				names := map[string]bool{}
				for i, w := range obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
					p := field.NewPath("webhooks").Index(i)
					errs = append(errs, validateWebhook(w.Name, names, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, p)...)
					errs = append(errs, matchconditions.Validate(w.MatchConditions, p.Child("matchConditions"))...)
					if w.ReinvocationPolicy != nil {
						errs = append(errs, registry.OneOf(*w.ReinvocationPolicy, p.Child("reinvocationPolicy"), admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)...)
					}
				}
				return errs
			},
		},
	}
}
