package cluster

import (
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// APIServicesKind is apiregistration.k8s.io/v1 APIService, stored as JSON as
// kube-apiserver's aggregator stores it; validation is kube-aggregator's.
func APIServicesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: apiregistration.GroupName, Version: "v1", Kind: "APIService", ListKind: "APIServiceList",
			Plural: "apiservices", Singular: "apiservice", Categories: []string{"api-extensions"}},
		New:         func() runtime.Object { return &apiregistration.APIService{} },
		NewList:     func() runtime.Object { return &apiregistration.APIServiceList{} },
		KeyRoot:     "apiregistration.k8s.io/apiservices",
		StorageJSON: true,
		Status:      true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*apiregistration.APIService).Status = apiregistration.APIServiceStatus{}
			},
			PrepareForUpdate: registry.Rule(func(a, old *apiregistration.APIService) { a.Status = old.Status }),
			// The availability controller's status writes keep the spec and the labels,
			// annotations, finalizers and owner references, as kube-aggregator's.
			PrepareForStatusUpdate: registry.Rule(func(a, old *apiregistration.APIService) {
				a.Spec = old.Spec
				a.Labels, a.Annotations = old.Labels, old.Annotations
				a.Finalizers, a.OwnerReferences = old.Finalizers, old.OwnerReferences
			}),
			Default: func(obj runtime.Object) { apiregistration.SetDefaults(obj.(*apiregistration.APIService)) },
			NameValidation: func(name string, _ bool) []string {
				return content.IsPathSegmentName(name)
			},
			Validate: func(obj runtime.Object) field.ErrorList { return validateAPIService(obj.(*apiregistration.APIService)) },
		},
	}
}

// validateAPIService is kube-aggregator's ValidateAPIService and ValidateAPIServiceStatus.
func validateAPIService(a *apiregistration.APIService) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if want := a.Spec.Version + "." + a.Spec.Group; a.Name != want && len(content.IsPathSegmentName(a.Name)) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), a.Name, fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", want)))
	}
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, field.Invalid(spec.Child("group"), a.Spec.Group, msg))
		}
	}
	for _, msg := range utilvalidation.IsDNS1035Label(a.Spec.Version) {
		errs = append(errs, field.Invalid(spec.Child("version"), a.Spec.Version, msg))
	}
	if p := a.Spec.GroupPriorityMinimum; p <= 0 || p > 20000 {
		errs = append(errs, field.Invalid(spec.Child("groupPriorityMinimum"), p, "must be positive and less than 20000"))
	}
	if p := a.Spec.VersionPriority; p <= 0 || p > 1000 {
		errs = append(errs, field.Invalid(spec.Child("versionPriority"), p, "must be positive and less than 1000"))
	}
	if svc := a.Spec.Service; svc == nil {
		if len(a.Spec.CABundle) != 0 {
			errs = append(errs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if a.Spec.InsecureSkipTLSVerify {
			errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), a.Spec.InsecureSkipTLSVerify, "local APIServices may not have insecureSkipTLSVerify"))
		}
	} else {
		if svc.Namespace == "" {
			errs = append(errs, field.Required(spec.Child("service", "namespace"), ""))
		}
		if svc.Name == "" {
			errs = append(errs, field.Required(spec.Child("service", "name"), ""))
		}
		var port int32
		if svc.Port != nil {
			port = *svc.Port
		}
		if msgs := utilvalidation.IsValidPortNum(int(port)); msgs != nil {
			errs = append(errs, field.Invalid(spec.Child("service", "port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
		}
		if a.Spec.InsecureSkipTLSVerify && len(a.Spec.CABundle) > 0 {
			errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), a.Spec.InsecureSkipTLSVerify, "may not be true if caBundle is present"))
		}
	}
	for i, c := range a.Status.Conditions {
		switch c.Status {
		case apiregistration.ConditionTrue, apiregistration.ConditionFalse, apiregistration.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("status", "conditions").Index(i).Child("status"), c.Status,
				[]string{string(apiregistration.ConditionTrue), string(apiregistration.ConditionFalse), string(apiregistration.ConditionUnknown)}))
		}
	}
	return errs
}
