package plugins

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// SignerAuthorizer reports whether user may do verb (approve, sign) on the signers resource
// of certificates.k8s.io named name.
type SignerAuthorizer func(ctx context.Context, user *request.User, verb, name string) bool

// authorizedForSigner is upstream's certificates.IsAuthorizedForSignerName: the verb on the
// signer's own name, or on its domain's wildcard ("example.com/*").
func authorizedForSigner(ctx context.Context, authorize SignerAuthorizer, user *request.User, verb, signer string) bool {
	if authorize(ctx, user, verb, signer) {
		return true
	}
	if i := strings.Index(signer, "/"); i > 0 {
		return authorize(ctx, user, verb, signer[:i]+"/*")
	}
	return false
}

func isCSR(a *admission.Attributes) bool {
	return a.Resource.Group == "certificates.k8s.io" && a.Resource.Resource == "certificatesigningrequests"
}

// CertificateApproval is upstream's plugin of that name: approving or denying a
// CertificateSigningRequest (its approval subresource) needs the approve verb on the
// request's signer.
type CertificateApproval struct {
	admission.Operations
	authorize SignerAuthorizer
}

// NewCertificateApproval returns the plugin asking authorize.
func NewCertificateApproval(authorize SignerAuthorizer) *CertificateApproval {
	return &CertificateApproval{Operations: admission.Operations{admission.Update}, authorize: authorize}
}

// Validate checks the approver's permission.
func (c *CertificateApproval) Validate(ctx context.Context, a *admission.Attributes) error {
	if !isCSR(a) || a.Subresource != "approval" {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil
	}
	if !authorizedForSigner(ctx, c.authorize, a.User, "approve", csr.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to approve requests with signerName %q", csr.Spec.SignerName))
	}
	return nil
}

// CertificateSigning is upstream's plugin of that name: setting or changing a
// CertificateSigningRequest's status.certificate (its status subresource) needs the sign
// verb on the request's signer.
type CertificateSigning struct {
	admission.Operations
	authorize SignerAuthorizer
}

// NewCertificateSigning returns the plugin asking authorize.
func NewCertificateSigning(authorize SignerAuthorizer) *CertificateSigning {
	return &CertificateSigning{Operations: admission.Operations{admission.Update}, authorize: authorize}
}

// Validate checks the signer's permission when the certificate changes.
func (c *CertificateSigning) Validate(ctx context.Context, a *admission.Attributes) error {
	if !isCSR(a) || a.Subresource != "status" {
		return nil
	}
	csr, ok1 := a.Object.(*certificatesv1.CertificateSigningRequest)
	old, ok2 := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	if !ok1 || !ok2 || apiequality.Semantic.DeepEqual(csr.Status.Certificate, old.Status.Certificate) {
		return nil
	}
	if !authorizedForSigner(ctx, c.authorize, a.User, "sign", old.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to sign requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}

// CertificateSubjectRestriction is upstream's plugin of that name: no request to the
// kubernetes.io/kube-apiserver-client signer may ask for the system:masters group.
type CertificateSubjectRestriction struct{ admission.Operations }

// NewCertificateSubjectRestriction returns the plugin.
func NewCertificateSubjectRestriction() *CertificateSubjectRestriction {
	return &CertificateSubjectRestriction{admission.Operations{admission.Create}}
}

// Validate refuses a system:masters client certificate request.
func (CertificateSubjectRestriction) Validate(_ context.Context, a *admission.Attributes) error {
	if !isCSR(a) || a.Subresource != "" {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return admission.NewForbidden(a, errors.New("failed to parse CSR: PEM block type must be CERTIFICATE REQUEST"))
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to parse CSR: %v", err))
	}
	if slices.Contains(req.Subject.Organization, "system:masters") {
		return admission.NewForbidden(a, fmt.Errorf("use of %s signer with system:masters group is not allowed", csr.Spec.SignerName))
	}
	return nil
}
