// Package admissionregistration holds the admissionregistration.k8s.io kinds: mutating and validating webhook
// configurations, validating admission policies and their bindings.
// Each kind is one file whose XxxKind function the controlplane lists.
package admissionregistration

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaulting and validation shared by mutating and validating webhook configurations.

// defaultWebhook is upstream's SetDefaults_{Validating,Mutating}Webhook, _Rule and _ServiceReference.
func defaultWebhook(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType, ns, objSel **metav1.LabelSelector,
	timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	registry.SetDefault(fp, admissionregistrationv1.Fail)
	registry.SetDefault(mp, admissionregistrationv1.Equivalent)
	registry.SetDefault(ns, metav1.LabelSelector{})
	registry.SetDefault(objSel, metav1.LabelSelector{})
	registry.SetDefault(timeout, 10)
	for i := range rules {
		registry.SetDefault(&rules[i].Scope, admissionregistrationv1.AllScopes)
	}
	if cc.Service != nil {
		registry.SetDefault(&cc.Service.Port, 443)
	}
}

func validateWebhook(name string, names map[string]bool, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType, se *admissionregistrationv1.SideEffectClass,
	timeout *int32, reviewVersions []string, nsSel, objSel *metav1.LabelSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, registry.ValidateQualifiedName(name, p.Child("name"))...)
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
	}
	var svc *WebhookService
	if cc.Service != nil {
		svc = &WebhookService{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Path: cc.Service.Path, Port: cc.Service.Port}
	}
	errs = append(errs, ValidateWebhookClientConfig(cc.URL, svc, p.Child("clientConfig"))...)
	for i, r := range rules {
		rp := p.Child("rules").Index(i)
		if len(r.Operations) == 0 {
			errs = append(errs, field.Required(rp.Child("operations"), ""))
		}
		for j, op := range r.Operations {
			errs = append(errs, registry.OneOf(op, rp.Child("operations").Index(j), admissionregistrationv1.OperationAll, admissionregistrationv1.Create,
				admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect)...)
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(rp.Child("apiGroups"), ""))
		}
		if len(r.APIVersions) == 0 {
			errs = append(errs, field.Required(rp.Child("apiVersions"), ""))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(rp.Child("resources"), ""))
		}
		if r.Scope != nil {
			errs = append(errs, registry.OneOf(*r.Scope, rp.Child("scope"), admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope, admissionregistrationv1.AllScopes)...)
		}
	}
	if fp != nil {
		errs = append(errs, registry.OneOf(*fp, p.Child("failurePolicy"), admissionregistrationv1.Fail, admissionregistrationv1.Ignore)...)
	}
	if mp != nil {
		errs = append(errs, registry.OneOf(*mp, p.Child("matchPolicy"), admissionregistrationv1.Equivalent, admissionregistrationv1.Exact)...)
	}
	if se == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	} else {
		errs = append(errs, registry.OneOf(*se, p.Child("sideEffects"), admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun)...)
	}
	if timeout != nil && (*timeout < 1 || *timeout > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	if len(reviewVersions) == 0 {
		errs = append(errs, field.Required(p.Child("admissionReviewVersions"), "must specify one of v1, v1beta1"))
	} else {
		known := false
		for _, v := range reviewVersions {
			known = known || v == "v1" || v == "v1beta1"
		}
		if !known {
			errs = append(errs, field.Invalid(p.Child("admissionReviewVersions"), reviewVersions, "must include at least one of v1, v1beta1"))
		}
	}
	if nsSel != nil {
		errs = append(errs, registry.ValidateSelector(nsSel, p.Child("namespaceSelector"))...)
	}
	if objSel != nil {
		errs = append(errs, registry.ValidateSelector(objSel, p.Child("objectSelector"))...)
	}
	return errs
}

// WebhookService is a webhook's service reference, admission's or a CRD conversion's.
type WebhookService struct {
	Namespace, Name string
	Path            *string
	Port            *int32
}

// ValidateWebhookClientConfig is upstream's check of a webhook's clientConfig: exactly one of
// url and service, then ValidateWebhookURL (https only, a host, no user, query or fragment)
// or ValidateWebhookService (name, namespace, port and a path of DNS-subdomain segments).
func ValidateWebhookClientConfig(u *string, svc *WebhookService, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	const form = "; desired format: https://host[/path]"
	switch {
	case (u == nil) == (svc == nil):
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case u != nil:
		up := p.Child("url")
		parsed, err := url.Parse(*u)
		if err != nil {
			return append(errs, field.Required(up, "url must be a valid URL: "+err.Error()+form))
		}
		if parsed.Scheme != "https" {
			errs = append(errs, field.Invalid(up, parsed.Scheme, "'https' is the only allowed URL scheme"+form))
		}
		if parsed.Host == "" {
			errs = append(errs, field.Invalid(up, parsed.Host, "host must be specified"+form))
		}
		if parsed.User != nil {
			errs = append(errs, field.Invalid(up, parsed.User.String(), "user information is not permitted in the URL"))
		}
		if parsed.Fragment != "" {
			errs = append(errs, field.Invalid(up, parsed.Fragment, "fragments are not permitted in the URL"))
		}
		if parsed.RawQuery != "" {
			errs = append(errs, field.Invalid(up, parsed.RawQuery, "query parameters are not permitted in the URL"))
		}
	default:
		sp := p.Child("service")
		errs = append(errs, registry.RequiredString(svc.Name, sp.Child("name"))...)
		errs = append(errs, registry.RequiredString(svc.Namespace, sp.Child("namespace"))...)
		if svc.Port != nil {
			if msgs := utilvalidation.IsValidPortNum(int(*svc.Port)); msgs != nil {
				errs = append(errs, field.Invalid(sp.Child("port"), *svc.Port, "port is not valid: "+strings.Join(msgs, ", ")))
			}
		}
		if svc.Path == nil || *svc.Path == "" || *svc.Path == "/" {
			return errs
		}
		path := *svc.Path
		if path == "//" {
			return append(errs, field.Invalid(sp.Child("path"), path, "segment[0] may not be empty"))
		}
		if !strings.HasPrefix(path, "/") {
			errs = append(errs, field.Invalid(sp.Child("path"), path, "must start with a '/'"))
		}
		for i, step := range strings.Split(strings.TrimSuffix(path[1:], "/"), "/") {
			if step == "" {
				errs = append(errs, field.Invalid(sp.Child("path"), path, fmt.Sprintf("segment[%d] may not be empty", i)))
				continue
			}
			for _, m := range utilvalidation.IsDNS1123Subdomain(step) {
				errs = append(errs, field.Invalid(sp.Child("path"), path, fmt.Sprintf("segment[%d]: %v", i, m)))
			}
		}
	}
	return errs
}
