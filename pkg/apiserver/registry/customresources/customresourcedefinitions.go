package customresources

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/admissionregistration"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CRDCleanupFinalizer holds a CustomResourceDefinition being deleted until its custom
// objects are gone, as upstream.
const CRDCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

var crdGR = apiextensionsv1.Resource("customresourcedefinitions")

func CustomResourceDefinitionsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: apiextensionsv1.GroupName, Version: "v1", Kind: "CustomResourceDefinition", ListKind: "CustomResourceDefinitionList",
			Plural: "customresourcedefinitions", Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"}},
		New:         func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:     func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		KeyRoot:     "apiextensions.k8s.io/customresourcedefinitions",
		StorageJSON: true, // as kube-apiserver
		Status:      true,
		Strategy: registry.Strategy{
			PrepareForUpdate: registry.Rule(func(crd, old *apiextensionsv1.CustomResourceDefinition) { crd.Status = old.Status }),
			// Upstream's status strategy means to reset metadata but resets it from the
			// request itself: status writes may change metadata.
			PrepareForStatusUpdate: registry.Rule(func(crd, old *apiextensionsv1.CustomResourceDefinition) { crd.Spec = old.Spec }),
			SpecChanged: registry.Changed(func(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionSpec {
				return crd.Spec
			}),
			PrepareForCreate: func(obj runtime.Object) {
				crd := obj.(*apiextensionsv1.CustomResourceDefinition)
				crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			},
			Default: func(obj runtime.Object) {
				crd := obj.(*apiextensionsv1.CustomResourceDefinition)
				apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
				// storedVersions: the storage version joins the list (upstream's strategy).
				for _, v := range crd.Spec.Versions {
					if v.Storage && !slices.Contains(crd.Status.StoredVersions, v.Name) {
						crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
					}
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCRD(obj.(*apiextensionsv1.CustomResourceDefinition))
			},
			ValidateNew: func(obj runtime.Object) field.ErrorList {
				crd := obj.(*apiextensionsv1.CustomResourceDefinition)
				return append(validateAPIApproval(crd, nil), validateCRDVersionRules(crd, nil)...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				crd, oldCRD := obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition)
				errs := validateAPIApproval(crd, oldCRD)
				errs = append(errs, validateCRDVersionRules(crd, oldCRD)...)
				if crd.Spec.Scope != oldCRD.Spec.Scope && crdEstablished(oldCRD) {
					errs = append(errs, field.Invalid(field.NewPath("spec", "scope"), crd.Spec.Scope, "field is immutable"))
				}
				if crd.Spec.Names.Kind != oldCRD.Spec.Names.Kind && crdEstablished(oldCRD) && oldCRD.Status.AcceptedNames.Kind != "" &&
					crd.Spec.Names.Kind != oldCRD.Status.AcceptedNames.Kind {
					errs = append(errs, field.Invalid(field.NewPath("status", "acceptedNames", "kind"), crd.Spec.Names.Kind, "field is immutable"))
				}
				return errs
			},
			DeletionFinalizers: func(obj runtime.Object, finalizers []string) []string {
				// Upstream's CRD delete adds the cleanup finalizer on the first request.
				if a, _ := registry.MetaAccessor(obj); a.GetDeletionTimestamp() == nil && !slices.Contains(finalizers, CRDCleanupFinalizer) {
					return append(slices.Clip(finalizers), CRDCleanupFinalizer)
				}
				return finalizers
			},
			MarkDeleting: func(obj runtime.Object) {
				crd := obj.(*apiextensionsv1.CustomResourceDefinition)
				setCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
					Reason: "InstanceDeletionPending", Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"})
			},
		},
	}
}

// validateCRD is upstream's ValidateCustomResourceDefinition for v1, less the checks of CEL
// cost estimates.
func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, `must be spec.names.plural+"."+spec.group`))
	}
	if crd.Spec.Group == "" {
		errs = append(errs, field.Required(spec.Child("group"), ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(crd.Spec.Group) {
			errs = append(errs, field.Invalid(spec.Child("group"), crd.Spec.Group, msg))
		}
		if len(strings.Split(crd.Spec.Group, ".")) < 2 {
			errs = append(errs, field.Invalid(spec.Child("group"), crd.Spec.Group, "should be a domain with at least one dot"))
		}
	}
	switch crd.Spec.Scope {
	case "":
		errs = append(errs, field.Required(spec.Child("scope"), ""))
	case apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped:
	default:
		errs = append(errs, field.NotSupported(spec.Child("scope"), crd.Spec.Scope, []string{string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped)}))
	}
	errs = append(errs, validateCRDNames(&crd.Spec.Names, spec.Child("names"))...)
	if len(crd.Spec.Versions) == 0 {
		errs = append(errs, field.Required(spec.Child("versions"), "must have exactly one version marked as storage version"))
	}
	storage, served := 0, 0
	seen := sets.New[string]()
	for i, v := range crd.Spec.Versions {
		p := spec.Child("versions").Index(i)
		if v.Storage {
			storage++
		}
		if v.Served {
			served++
		}
		for _, msg := range utilvalidation.IsDNS1035Label(v.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), v.Name, msg))
		}
		if seen.Has(v.Name) {
			errs = append(errs, field.Invalid(spec.Child("versions"), crd.Spec.Versions, "must contain unique version names"))
		}
		seen.Insert(v.Name)
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Required(p.Child("schema", "openAPIV3Schema"), "schemas are required"))
			if len(v.SelectableFields) > 0 {
				errs = append(errs, field.Invalid(p.Child("selectableFields"), "", "may only be set when `version.schema.openAPIV3Schema` is not included"))
			}
		} else {
			errs = append(errs, validateCRDSchema(v.Schema.OpenAPIV3Schema, p.Child("schema", "openAPIV3Schema"))...)
			errs = append(errs, validateSelectableFields(v.SelectableFields, v.Schema.OpenAPIV3Schema, p.Child("selectableFields"))...)
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			sc := v.Subresources.Scale
			sp := p.Child("subresources", "scale")
			if !strings.HasPrefix(sc.SpecReplicasPath, ".spec.") {
				errs = append(errs, field.Invalid(sp.Child("specReplicasPath"), sc.SpecReplicasPath, "should be a json path under .spec"))
			}
			if !strings.HasPrefix(sc.StatusReplicasPath, ".status.") {
				errs = append(errs, field.Invalid(sp.Child("statusReplicasPath"), sc.StatusReplicasPath, "should be a json path under .status"))
			}
			if sc.LabelSelectorPath != nil && !strings.HasPrefix(*sc.LabelSelectorPath, ".spec.") && !strings.HasPrefix(*sc.LabelSelectorPath, ".status.") {
				errs = append(errs, field.Invalid(sp.Child("labelSelectorPath"), *sc.LabelSelectorPath, "should be a json path under either .spec or .status"))
			}
		}
		for j, c := range v.AdditionalPrinterColumns {
			cp := p.Child("additionalPrinterColumns").Index(j)
			if c.Name == "" {
				errs = append(errs, field.Required(cp.Child("name"), ""))
			}
			switch c.Type {
			case "integer", "number", "string", "boolean", "date":
			default:
				errs = append(errs, field.NotSupported(cp.Child("type"), c.Type, []string{"integer", "number", "string", "boolean", "date"}))
			}
			if c.JSONPath == "" {
				errs = append(errs, field.Required(cp.Child("JSONPath"), ""))
			}
			if c.Priority < 0 {
				errs = append(errs, field.Invalid(cp.Child("priority"), c.Priority, "must be a non-negative integer"))
			}
		}
	}
	if storage != 1 && len(crd.Spec.Versions) > 0 {
		errs = append(errs, field.Invalid(spec.Child("versions"), crd.Spec.Versions, "must have exactly one version marked as storage version"))
	}
	if served == 0 && len(crd.Spec.Versions) > 0 {
		errs = append(errs, field.Invalid(spec.Child("versions"), crd.Spec.Versions, "must have at least one version marked as served"))
	}
	errs = append(errs, validateCRDConversion(crd.Spec.Conversion, spec.Child("conversion"))...)
	for i, v := range crd.Status.StoredVersions {
		if !seen.Has(v) {
			errs = append(errs, field.Invalid(field.NewPath("status", "storedVersions").Index(i), v, "must appear in spec.versions"))
		}
	}
	return errs
}

func validateCRDNames(n *apiextensionsv1.CustomResourceDefinitionNames, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	dns1035 := func(fp *field.Path, v string, required bool) {
		if v == "" {
			if required {
				errs = append(errs, field.Required(fp, ""))
			}
			return
		}
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(fp, v, msg))
		}
	}
	dns1035(p.Child("plural"), n.Plural, true)
	dns1035(p.Child("singular"), n.Singular, true)
	dns1035(p.Child("kind"), strings.ToLower(n.Kind), true)
	dns1035(p.Child("listKind"), strings.ToLower(n.ListKind), true)
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, field.Invalid(p.Child("listKind"), n.ListKind, "kind and listKind cannot be the same"))
	}
	for i, s := range n.ShortNames {
		dns1035(p.Child("shortNames").Index(i), s, true)
	}
	for i, c := range n.Categories {
		dns1035(p.Child("categories").Index(i), c, true)
	}
	return errs
}

// validateCRDSchema checks that a version's schema converts and is structural.
func validateCRDSchema(v1 *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	internal, err := internalSchema(v1)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	var errs field.ErrorList
	if s.Type != "object" {
		errs = append(errs, field.Invalid(p.Child("type"), s.Type, "must be object at the root"))
	}
	return append(errs, structuralschema.ValidateStructural(p, s)...)
}

// internalSchema converts a v1 schema to apiextensions' internal form, which the schema
// packages take.
func internalSchema(v1 *apiextensionsv1.JSONSchemaProps) (*apiextensions.JSONSchemaProps, error) {
	out := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, out, nil); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return out, nil
}

// crdEstablished reports the Established condition.
func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crdCondition(crd, apiextensionsv1.Established) == apiextensionsv1.ConditionTrue
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) apiextensionsv1.ConditionStatus {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// setCRDCondition sets a condition, keeping its transition time when the status is unchanged.
func setCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	for i := range crd.Status.Conditions {
		old := &crd.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status != c.Status {
			old.LastTransitionTime = metav1.Now()
		}
		old.Status, old.Reason, old.Message = c.Status, c.Reason, c.Message
		return
	}
	c.LastTransitionTime = metav1.Now()
	crd.Status.Conditions = append(crd.Status.Conditions, c)
}

// validateCRDConversion is upstream's validateCustomResourceConversion; its paths are those
// of the internal version, as upstream's messages (webhookClientConfig).
func validateCRDConversion(c *apiextensionsv1.CustomResourceConversion, p *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	errs := registry.OneOf(c.Strategy, p.Child("strategy"), apiextensionsv1.NoneConverter, apiextensionsv1.WebhookConverter)
	ccPath := p.Child("webhookClientConfig")
	if c.Strategy != apiextensionsv1.WebhookConverter {
		if c.Webhook != nil && c.Webhook.ClientConfig != nil {
			errs = append(errs, field.Forbidden(ccPath, "should not be set when strategy is not set to Webhook"))
		}
		if c.Webhook != nil && len(c.Webhook.ConversionReviewVersions) > 0 {
			errs = append(errs, field.Forbidden(p.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
		return errs
	}
	if c.Webhook == nil || c.Webhook.ClientConfig == nil {
		errs = append(errs, field.Required(ccPath, "required when strategy is set to Webhook"))
	} else {
		cc := c.Webhook.ClientConfig
		var svc *admissionregistration.WebhookService
		if cc.Service != nil {
			svc = &admissionregistration.WebhookService{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Path: cc.Service.Path, Port: cc.Service.Port}
		}
		errs = append(errs, admissionregistration.ValidateWebhookClientConfig(cc.URL, svc, ccPath)...)
		if len(cc.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(cc.CABundle) {
			errs = append(errs, field.Invalid(ccPath.Child("caBundle"), cc.CABundle, "unable to load root certificates: unable to parse bytes as PEM block"))
		}
	}
	vp := p.Child("conversionReviewVersions")
	var versions []string
	if c.Webhook != nil {
		versions = c.Webhook.ConversionReviewVersions
	}
	if len(versions) == 0 {
		return append(errs, field.Required(vp, ""))
	}
	seen, accepted := map[string]bool{}, false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(vp.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, m := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(vp.Index(i), v, m))
		}
		accepted = accepted || v == "v1" || v == "v1beta1"
	}
	if !accepted {
		errs = append(errs, field.Invalid(vp, versions, "must include at least one of v1, v1beta1"))
	}
	return errs
}

// maxSelectableFields is upstream's MaxSelectableFields.
const maxSelectableFields = 8

// validateSelectableFields is upstream's ValidateCustomResourceSelectableFields: each a
// path (no array steps) into the schema, outside metadata, to a string, boolean or integer,
// once, and at most maxSelectableFields. (Upstream lets an update keep more than the maximum
// when the list is unchanged; a definition with more cannot be created here or there.)
func validateSelectableFields(sfs []apiextensionsv1.SelectableField, schema *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	if len(sfs) == 0 {
		return nil
	}
	internal, err := internalSchema(schema)
	if err != nil {
		return nil // reported by validateCRDSchema
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil
	}
	var errs field.ErrorList
	unique := sets.New[string]()
	for i, sf := range sfs {
		jp := p.Index(i).Child("jsonPath")
		if sf.JSONPath == "" {
			errs = append(errs, field.Required(jp, ""))
			continue
		}
		path, found, err := cel.ValidFieldPath(sf.JSONPath, ss, cel.WithFieldPathAllowArrayNotation(false))
		if err != nil {
			errs = append(errs, field.Invalid(jp, sf.JSONPath, fmt.Sprintf("is an invalid path: %v", err)))
			continue
		}
		if path.Root().String() == "metadata" {
			errs = append(errs, field.Invalid(jp, sf.JSONPath, "must not point to fields in metadata"))
		}
		if found == nil || (found.Type != "string" && found.Type != "boolean" && found.Type != "integer") {
			errs = append(errs, field.Invalid(jp, sf.JSONPath, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))
		}
		if unique.Has(path.String()) {
			errs = append(errs, field.Duplicate(jp, sf.JSONPath))
		} else {
			unique.Insert(path.String())
		}
	}
	if unique.Len() > maxSelectableFields {
		errs = append(errs, field.TooMany(p, unique.Len(), maxSelectableFields))
	}
	return errs
}

// validateAPIApproval is upstream's: a definition in a group of the Kubernetes project
// (k8s.io, kubernetes.io and their subdomains) carries the api-approved.kubernetes.io
// annotation, a URL or a reason starting with "unapproved"; an update that leaves the
// annotation's state as it was is never refused.
func validateAPIApproval(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return nil
	}
	state, reason := apihelpers.GetAPIApprovalState(crd.Annotations)
	if old != nil {
		if oldState, _ := apihelpers.GetAPIApprovalState(old.Annotations); oldState == state {
			return nil
		}
	}
	p := field.NewPath("metadata", "annotations").Key(apiextensionsv1.KubeAPIApprovedAnnotation)
	switch state {
	case apihelpers.APIApproved, apihelpers.APIApprovalBypassed:
		return nil
	case apihelpers.APIApprovalMissing:
		return field.ErrorList{field.Required(p, reason)}
	default:
		return field.ErrorList{field.Invalid(p, crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation], reason)}
	}
}

// apiApprovalCondition is upstream's KubernetesAPIApprovalPolicyConformant condition of a
// definition in a protected group (its apiapproval controller's); nil for other groups.
func apiApprovalCondition(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return nil
	}
	state, reason := apihelpers.GetAPIApprovalState(crd.Annotations)
	c := &apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.KubernetesAPIApprovalPolicyConformant,
		Status: apiextensionsv1.ConditionFalse, Message: reason}
	switch state {
	case apihelpers.APIApprovalInvalid:
		c.Reason = "InvalidAnnotation"
	case apihelpers.APIApprovalMissing:
		c.Reason = "MissingAnnotation"
	case apihelpers.APIApproved:
		c.Status, c.Reason = apiextensionsv1.ConditionTrue, "ApprovedAnnotation"
	case apihelpers.APIApprovalBypassed:
		c.Reason = "UnapprovedAnnotation"
	default:
		c.Status, c.Reason = apiextensionsv1.ConditionUnknown, "UnknownAnnotation"
	}
	return c
}
