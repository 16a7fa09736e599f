package plugins

import (
	"context"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterTrustBundleAttest is upstream's plugin of that name: creating or updating a
// ClusterTrustBundle that names a signer needs the attest verb on the signers resource of
// certificates.k8s.io named after that signer (or its domain's "example.com/*"), so that
// only the signer's owner may publish trust anchors in its name.
type ClusterTrustBundleAttest struct {
	admission.Operations
	authorize SignerAuthorizer
}

// NewClusterTrustBundleAttest returns the plugin asking authorize.
func NewClusterTrustBundleAttest(authorize SignerAuthorizer) *ClusterTrustBundleAttest {
	return &ClusterTrustBundleAttest{Operations: admission.Operations{admission.Create, admission.Update}, authorize: authorize}
}

// trustBundleSigner is the signer a ClusterTrustBundle of any served version names.
func trustBundleSigner(obj runtime.Object) (string, bool) {
	switch b := obj.(type) {
	case *certificatesv1.ClusterTrustBundle:
		return b.Spec.SignerName, true
	case *certificatesv1beta1.ClusterTrustBundle:
		return b.Spec.SignerName, true
	case *certificatesv1alpha1.ClusterTrustBundle:
		return b.Spec.SignerName, true
	}
	return "", false
}

// Validate checks the writer's attest permission. The new object's signer is the one
// checked: validation refuses a change of it before this runs.
func (c *ClusterTrustBundleAttest) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "certificates.k8s.io" || a.Resource.Resource != "clustertrustbundles" {
		return nil
	}
	signer, ok := trustBundleSigner(a.Object)
	if !ok {
		// upstream names the old object's type here
		return admission.NewForbidden(a, fmt.Errorf("expected type ClusterTrustBundle, got: %T", a.OldObject))
	}
	if signer == "" {
		return nil
	}
	// What the garbage collector and storage migration write changes nothing the signer
	// vouches for.
	if a.Operation == admission.Update && onlyGCFieldsChanged(a.Object, a.OldObject) {
		return nil
	}
	if !authorizedForSigner(ctx, c.authorize, a.User, "attest", signer) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to attest for signerName %q", signer))
	}
	return nil
}

// onlyGCFieldsChanged is upstream's rbac.IsOnlyMutatingGCFields: obj differs from old in
// nothing but owner references, finalizers and managed fields (an unchanged object too).
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	if obj == nil || old == nil {
		return false
	}
	cp := obj.DeepCopyObject()
	ca, err1 := meta.Accessor(cp)
	oa, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return false
	}
	ca.SetOwnerReferences(oa.GetOwnerReferences())
	ca.SetFinalizers(oa.GetFinalizers())
	ca.SetSelfLink(oa.GetSelfLink())
	ca.SetManagedFields(oa.GetManagedFields())
	cp.GetObjectKind().SetGroupVersionKind(old.GetObjectKind().GroupVersionKind())
	return apiequality.Semantic.DeepEqual(cp, old)
}
