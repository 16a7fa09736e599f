package cluster

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var keyUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment, certificatesv1.UsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment, certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign,
	certificatesv1.UsageEncipherOnly, certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection, certificatesv1.UsageSMIME,
	certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel, certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping,
	certificatesv1.UsageOCSPSigning, certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
}

// CertificateSigningRequestsKind serves CSRs. The main resource changes metadata only
// (spec and status are kept); certificates are set through /status, the Approved
// and Denied conditions only through /approval (`kubectl certificate approve`), as upstream.
func CertificateSigningRequestsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest", ListKind: "CertificateSigningRequestList",
			Plural: "certificatesigningrequests", Singular: "certificatesigningrequest", ShortNames: []string{"csr"}},
		New:     func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				csr := obj.(*certificatesv1.CertificateSigningRequest)
				csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
				csr.Status = certificatesv1.CertificateSigningRequestStatus{}
			},
			// The requester is the authenticated caller, as upstream.
			SetCreator: func(obj runtime.Object, u *request.User) {
				csr := obj.(*certificatesv1.CertificateSigningRequest)
				csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.Name, u.UID, u.Groups
				csr.Spec.Extra = nil
				for k, v := range u.Extra {
					if csr.Spec.Extra == nil {
						csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
					}
					csr.Spec.Extra[k] = certificatesv1.ExtraValue(v)
				}
			},
			// The main resource changes metadata only: a write's spec and status are
			// ignored, as upstream's.
			PrepareForUpdate: registry.Rule(func(csr, old *certificatesv1.CertificateSigningRequest) {
				csr.Spec = old.Spec
				csr.Status = old.Status
			}),
			// The served /status is mergeCSRStatus (AddSubresources), which keeps the
			// approval conditions too; this is the rule of the store's own status writes.
			PrepareForStatusUpdate: registry.Rule(func(csr, old *certificatesv1.CertificateSigningRequest) { csr.Spec = old.Spec }),
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCSR(obj.(*certificatesv1.CertificateSigningRequest))
			},
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
			},
		},
	}
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if err := checkCSRRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		errs = append(errs, registry.OneOf(u, spec.Child("usages").Index(i), keyUsages...)...)
		if seen[u] {
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if csr.Spec.SignerName == "kubernetes.io/legacy-unknown" {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(csr.Spec.SignerName, spec.Child("signerName"))...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateCSRConditions(csr.Status.Conditions, field.NewPath("status", "conditions"))...)
	if err := checkCertificatePEM(csr.Status.Certificate); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
	}
	return errs
}

// checkCSRRequest is upstream's ParseCSR and signature check.
func checkCSRRequest(data []byte) error {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

func checkCertificatePEM(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		if _, err := x509.ParseCertificates(block.Bytes); err != nil {
			return err
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateSignerName is upstream's: a domain, a slash and a path ("example.com/signer").
func validateSignerName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || path == "" {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	for _, m := range utilvalidation.IsDNS1123Subdomain(domain) {
		errs = append(errs, field.Invalid(p, name, "validating domain component: "+m))
	}
	return errs
}

func validateCSRConditions(conds []certificatesv1.CertificateSigningRequestCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range conds {
		if c.Type == "" {
			errs = append(errs, field.Required(p.Index(i).Child("type"), ""))
		}
		if c.Status == "" {
			errs = append(errs, field.Required(p.Index(i).Child("status"), ""))
		} else if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			errs = append(errs, registry.OneOf(c.Status, p.Index(i).Child("status"), "True")...)
		} else {
			errs = append(errs, registry.OneOf(c.Status, p.Index(i).Child("status"), "False", "True", "Unknown")...)
		}
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if seen[certificatesv1.CertificateDenied] {
				errs = append(errs, field.Invalid(p.Index(i).Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
			}
		case certificatesv1.CertificateDenied:
			if seen[certificatesv1.CertificateApproved] {
				errs = append(errs, field.Invalid(p.Index(i).Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
			}
		}
		if seen[c.Type] && (c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) {
			errs = append(errs, field.Duplicate(p.Index(i).Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return errs
}

func csrConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

// validateCSRUpdate is upstream's validateCertificateSigningRequestUpdate for /status
// (approval false) and /approval (approval true).
func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest, approval bool) field.ErrorList {
	p := field.NewPath("status", "conditions")
	var errs field.ErrorList
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(csrConditions(csr, t)) < len(csrConditions(old, t)) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !approval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			n, o := csrConditions(csr, t), csrConditions(old, t)
			switch {
			case len(n) < len(o):
			case len(n) > len(o):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !registry.SemanticEqual(n, o):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		if approval {
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		} else if len(old.Status.Certificate) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return errs
}

// stampCSRConditions is upstream's populateConditionTimestamps.
func stampCSRConditions(csr, old *certificatesv1.CertificateSigningRequest) {
	now := metav1.Now()
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
			for _, oc := range old.Status.Conditions {
				if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
					c.LastTransitionTime = oc.LastTransitionTime
					break
				}
			}
		}
	}
}

// mergeCSRStatus is certificatesigningrequests/{name}/status: status from the request, but
// the Approved and Denied conditions stay as they were.
func mergeCSRStatus(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	old, req := current.(*certificatesv1.CertificateSigningRequest), request.(*certificatesv1.CertificateSigningRequest)
	out := old.DeepCopy()
	out.Status = req.Status
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		oldIdx, newIdx := conditionIndices(old, t), conditionIndices(out, t)
		if len(oldIdx) == len(newIdx) {
			for i, oi := range oldIdx {
				out.Status.Conditions[newIdx[i]] = old.Status.Conditions[oi]
			}
		}
	}
	stampCSRConditions(out, old)
	return out, validateCSRUpdate(out, old, false), nil
}

// mergeCSRApproval is certificatesigningrequests/{name}/approval: only status.conditions
// come from the request.
func mergeCSRApproval(current, request runtime.Object) (runtime.Object, field.ErrorList, error) {
	old, req := current.(*certificatesv1.CertificateSigningRequest), request.(*certificatesv1.CertificateSigningRequest)
	out := old.DeepCopy()
	out.Status.Conditions = req.Status.Conditions
	stampCSRConditions(out, old)
	return out, validateCSRUpdate(out, old, true), nil
}

func conditionIndices(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []int {
	var out []int
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, i)
		}
	}
	return out
}

// AddSubresources adds the certificates group's subresources: a CertificateSigningRequest's
// status and approval. resource looks up a served resource.
func AddSubresources(resource func(schema.GroupResource) *registry.Resource) {
	csr := resource(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"})
	if csr == nil {
		return
	}
	csr.Subresources["status"] = registry.NewSubresourceStore(csr.Store, mergeCSRStatus)
	csr.Subresources["approval"] = registry.NewSubresourceStore(csr.Store, mergeCSRApproval)
}
