package cluster

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds of spec.maxExpirationSeconds (pkg/apis/certificates).
const (
	minMaxExpirationSeconds           = 60 * 60
	maxMaxExpirationSeconds           = 91 * 24 * 60 * 60
	kubernetesMaxMaxExpirationSeconds = 24 * 60 * 60
)

// PodCertificateRequestsKind serves PodCertificateRequests (certificates.k8s.io/v1, GA in
// 1.37): a kubelet asks a signer for a pod's certificate; the spec is fixed, the signer
// answers through /status. The proof-of-possession signature is not verified here.
func PodCertificateRequestsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "certificates.k8s.io", Version: "v1", Kind: "PodCertificateRequest", ListKind: "PodCertificateRequestList",
			Plural: "podcertificaterequests", Singular: "podcertificaterequest", Namespaced: true},
		New:     func() runtime.Object { return &certificatesv1.PodCertificateRequest{} },
		NewList: func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
		Status:  true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*certificatesv1.PodCertificateRequest).Status = certificatesv1.PodCertificateRequestStatus{}
			},
			PrepareForUpdate: registry.Rule(func(r, old *certificatesv1.PodCertificateRequest) { r.Status = old.Status }),
			PrepareForStatusUpdate: registry.Rule(func(r, old *certificatesv1.PodCertificateRequest) {
				r.Spec = old.Spec
				metav1.ResetObjectMetaForStatus(&r.ObjectMeta, &old.ObjectMeta)
			}),
			Fields: func(obj runtime.Object) fields.Set {
				s := obj.(*certificatesv1.PodCertificateRequest).Spec
				return fields.Set{"spec.signerName": s.SignerName, "spec.podName": s.PodName, "spec.nodeName": string(s.NodeName)}
			},
			ValidateNew: func(obj runtime.Object) field.ErrorList {
				return validatePodCertificateRequestSpec(&obj.(*certificatesv1.PodCertificateRequest).Spec)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				r, o := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
				return registry.ImmutableField(r.Spec, o.Spec, field.NewPath("spec"))
			},
		},
	}
}

func validatePodCertificateRequestSpec(s *certificatesv1.PodCertificateRequestSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := validateSignerName(s.SignerName, p.Child("signerName"))
	for _, f := range []struct{ name, v string }{
		{"podName", s.PodName}, {"serviceAccountName", s.ServiceAccountName}, {"nodeName", string(s.NodeName)},
	} {
		if f.v == "" {
			errs = append(errs, field.Required(p.Child(f.name), ""))
		} else {
			errs = append(errs, registry.ValidateDNS1123Subdomain(f.v, p.Child(f.name))...)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"podUID", string(s.PodUID)}, {"serviceAccountUID", string(s.ServiceAccountUID)}, {"nodeUID", string(s.NodeUID)},
	} {
		if f.v == "" {
			errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must not be empty"))
		}
	}
	if s.MaxExpirationSeconds == nil {
		return append(errs, field.Required(p.Child("maxExpirationSeconds"), "must be set"))
	}
	limit := int32(maxMaxExpirationSeconds)
	if strings.HasPrefix(s.SignerName, "kubernetes.io/") {
		limit = kubernetesMaxMaxExpirationSeconds
	}
	if m := *s.MaxExpirationSeconds; m < minMaxExpirationSeconds || m > limit {
		errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), m, fmt.Sprintf("must be in the range [%d, %d]", minMaxExpirationSeconds, limit)))
	}
	// v1 has only the stub request (the public key and proof of possession fields are
	// internal-only), so this is upstream's "exactly one of" check as v1 clients meet it.
	if len(s.StubPKCS10Request) == 0 {
		return append(errs, field.Invalid(p, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(errs, validateStubPKCS10Request(s.StubPKCS10Request, p.Child("stubPKCS10Request"))...)
}

// validateStubPKCS10Request is upstream's: a signed PKCS#10 request for an Ed25519, ECDSA
// (P-256, P-384, P-521) or RSA (3072 or 4096 bits) key; its contents are not looked at.
func validateStubPKCS10Request(der []byte, p *field.Path) field.ErrorList {
	const maxSize = 10 * 1024
	if len(der) > maxSize {
		return field.ErrorList{field.TooLong(p, der, maxSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(p, "curve "+pub.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(p, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if err := req.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, "invalid signature")}
	}
	return nil
}
