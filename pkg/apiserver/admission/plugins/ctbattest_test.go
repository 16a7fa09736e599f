package plugins

import (
	"context"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestClusterTrustBundleAttest follows upstream's ctbattest TestPluginValidate: the attest
// verb on the signer or its domain's wildcard is needed to write a bundle naming a signer,
// except for one without a signer and an update changing only what the garbage collector
// writes.
func TestClusterTrustBundleAttest(t *testing.T) {
	bundle := func(signer string, owners ...metav1.OwnerReference) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "abc.com:xyz:one", OwnerReferences: owners},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: "pem"}}
	}
	changed := bundle("abc.com/xyz")
	changed.Spec.TrustBundle = "other pem"
	const denied = `clustertrustbundles.certificates.k8s.io "abc.com:xyz:one" is forbidden: user not permitted to attest for signerName "abc.com/xyz"`
	for _, tc := range []struct {
		name     string
		op       admission.Operation
		obj, old runtime.Object
		allowed  string // the signers name the user may attest for; "" none
		wantErr  string
	}{
		{"wrong type on create", admission.Create, &certificatesv1.ClusterTrustBundleList{}, nil, "",
			`clustertrustbundles.certificates.k8s.io "Unknown" is forbidden: expected type ClusterTrustBundle, got: <nil>`},
		{"wrong type on update", admission.Update, &certificatesv1.ClusterTrustBundleList{}, bundle("abc.com/xyz"), "",
			`clustertrustbundles.certificates.k8s.io "Unknown" is forbidden: expected type ClusterTrustBundle, got: *v1.ClusterTrustBundle`},
		{"refused when the authorizer says no", admission.Update, changed, bundle("abc.com/xyz"), "", denied},
		{"create without a signer", admission.Create, bundle(""), nil, "", ""},
		{"update without a signer", admission.Update, bundle(""), bundle(""), "", ""},
		{"create with attest on the signer", admission.Create, bundle("abc.com/xyz"), nil, "abc.com/xyz", ""},
		{"update with attest on the signer", admission.Update, changed, bundle("abc.com/xyz"), "abc.com/xyz", ""},
		{"create with attest on the domain", admission.Create, bundle("abc.com/xyz"), nil, "abc.com/*", ""},
		{"update with attest on the domain", admission.Update, changed, bundle("abc.com/xyz"), "abc.com/*", ""},
		{"create with attest on another signer", admission.Create, bundle("abc.com/xyz"), nil, "notabc.com/xyz", denied},
		{"update with attest on another signer", admission.Update, changed, bundle("abc.com/xyz"), "notabc.com/xyz", denied},
		{"no-op update", admission.Update, bundle("abc.com/xyz"), bundle("abc.com/xyz"), "", ""},
		{"owner reference update", admission.Update, bundle("abc.com/xyz", metav1.OwnerReference{APIVersion: "something"}), bundle("abc.com/xyz"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			authorize := func(_ context.Context, _ *request.User, verb, name string) bool {
				asked = append(asked, verb+" "+name)
				return verb == "attest" && name == tc.allowed
			}
			p := NewClusterTrustBundleAttest(authorize)
			if !p.Handles(tc.op) || p.Handles(admission.Delete) {
				t.Fatalf("handles %s: %v, delete: %v", tc.op, p.Handles(tc.op), p.Handles(admission.Delete))
			}
			a := &admission.Attributes{Operation: tc.op, Kind: certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"),
				Resource: certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles"), Name: "abc.com:xyz:one",
				Object: tc.obj, OldObject: tc.old, User: &request.User{Name: "alice"}}
			if tc.old == nil {
				a.OldObject = nil // a nil interface, as on a create
			}
			err := p.Validate(context.Background(), a)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v (asked %v)", err, asked)
			case tc.wantErr != "" && (!apierrors.IsForbidden(err) || err.Error() != tc.wantErr):
				t.Fatalf("got %v, want 403 %q", err, tc.wantErr)
			}
		})
	}
}

// TestClusterTrustBundleAttestOtherResources: other resources pass untouched.
func TestClusterTrustBundleAttestOtherResources(t *testing.T) {
	p := NewClusterTrustBundleAttest(func(context.Context, *request.User, string, string) bool { return false })
	a := &admission.Attributes{Operation: admission.Create, Resource: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"),
		Object: &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "abc.com/xyz"}}}
	if err := p.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}
