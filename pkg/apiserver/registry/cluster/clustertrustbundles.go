package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxTrustBundleSize is upstream's certificates.MaxTrustBundleSize.
const maxTrustBundleSize = 1 * 1024 * 1024

// ClusterTrustBundlesKind serves ClusterTrustBundles (certificates.k8s.io/v1, GA in 1.37):
// CA certificates for pods to trust, optionally tied to a signer whose name prefixes the
// object's name; selectable by spec.signerName.
func ClusterTrustBundlesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle", ListKind: "ClusterTrustBundleList",
			Plural: "clustertrustbundles", Singular: "clustertrustbundle"},
		New:     func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
		NewList: func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
		Strategy: registry.Strategy{
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
			},
			ObjectNameValidation: func(obj runtime.Object) apivalidation.ValidateNameFunc {
				return trustBundleName(obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				b := obj.(*certificatesv1.ClusterTrustBundle)
				var errs field.ErrorList
				if b.Spec.SignerName != "" {
					errs = append(errs, validateSignerName(b.Spec.SignerName, field.NewPath("spec", "signerName"))...)
				}
				return append(errs, validateTrustBundle(b.Spec.TrustBundle, field.NewPath("spec", "trustBundle"))...)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				b, o := obj.(*certificatesv1.ClusterTrustBundle), old.(*certificatesv1.ClusterTrustBundle)
				return registry.ImmutableField(b.Spec.SignerName, o.Spec.SignerName, field.NewPath("spec", "signerName"))
			},
		},
	}
}

// trustBundleName is upstream's ValidateClusterTrustBundleName: a bundle of a signer is
// named "<signer with / as :>:<DNS-1123 subdomain>", one without is a DNS-1123 subdomain
// (so has no ":").
func trustBundleName(signer string) apivalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if signer == "" {
			if strings.Contains(name, ":") {
				return []string{"ClusterTrustBundle without signer name must not have \":\" in its name"}
			}
			return apivalidation.NameIsDNSSubdomain(name, prefix)
		}
		want := strings.ReplaceAll(signer, "/", ":") + ":"
		if !strings.HasPrefix(name, want) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, want)}
		}
		return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, want), prefix)
	}
}

// validateTrustBundle is upstream's: PEM CERTIFICATE blocks without headers, each a CA, at
// least one, none twice.
func validateTrustBundle(in string, p *field.Path) field.ErrorList {
	if len(in) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(p, "", maxTrustBundleSize)}
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	rest := []byte(in)
	for i := 0; ; i++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		bad := func(msg string) {
			errs = append(errs, field.Invalid(p, "<value omitted>", fmt.Sprintf("entry %d %s", i, msg)))
		}
		switch cert, err := x509.ParseCertificate(b.Bytes); {
		case b.Type != "CERTIFICATE":
			bad("has bad block type: " + b.Type)
		case len(b.Headers) != 0:
			bad("has PEM block headers")
		case err != nil:
			bad("does not parse as X.509")
		case !cert.IsCA:
			bad("does not have the CA bit set")
		case !cert.BasicConstraintsValid:
			bad("has invalid basic constraints")
		default:
			seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
		}
	}
	if len(errs) != 0 {
		return errs // no duplicate or missing anchors on top of a malformed block, as upstream
	}
	if len(seen) == 0 {
		errs = append(errs, field.Invalid(p, "<value omitted>", "at least one trust anchor must be provided"))
	}
	for _, idx := range seen {
		if len(idx) > 1 {
			errs = append(errs, field.Invalid(p, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices %v)", idx)))
		}
	}
	return errs
}
