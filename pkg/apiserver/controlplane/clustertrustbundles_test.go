package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selfSignedCA is a PEM CA certificate for trust bundles.
func selfSignedCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestClusterTrustBundleNames: upstream's ValidateClusterTrustBundleName is the name rule,
// as metadata.name's: a signer's bundle is named "<signer, / as :>:<subdomain>" (the ":"
// being no DNS character), one without a signer is a plain subdomain.
func TestClusterTrustBundleNames(t *testing.T) {
	r := newRegistry(t)
	ca := selfSignedCA(t)
	for _, tc := range []struct {
		name, signer, want string // want: the error, "" for none
	}{
		{"example.com:signer:one", "example.com/signer", ""},
		{"plain", "", ""},
		{"a:b", "", `ClusterTrustBundle.certificates.k8s.io "a:b" is invalid: metadata.name: Invalid value: "a:b": ClusterTrustBundle without signer name must not have ":" in its name`},
		{"other:one", "example.com/signer", `ClusterTrustBundle.certificates.k8s.io "other:one" is invalid: metadata.name: Invalid value: "other:one": ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:`},
		{"example.com:signer:Bad", "example.com/signer", `ClusterTrustBundle.certificates.k8s.io "example.com:signer:Bad" is invalid: metadata.name: Invalid value: "example.com:signer:Bad": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
				Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: tc.signer, TrustBundle: ca}}
			_, err := store(r, "certificates.k8s.io", "clustertrustbundles").Create(context.Background(), "", "", b, &metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}
