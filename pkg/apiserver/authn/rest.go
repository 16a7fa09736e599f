package authn

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var authnGV = authenticationv1.SchemeGroupVersion

// TokenRequests serves serviceaccounts/token: it issues bound, expiring tokens.
type TokenRequests struct {
	Signer    *Signer
	Issuer    string
	Audiences []string      // default audiences (--api-audiences)
	MaxExpiry time.Duration // --service-account-max-token-expiration; 0: no limit
	Get       Getter
	Now       func() time.Time
}

func (t *TokenRequests) New() runtime.Object { return &authenticationv1.TokenRequest{} }
func (t *TokenRequests) Kind() schema.GroupVersionKind {
	return authnGV.WithKind("TokenRequest")
}

// Create issues a token for the ServiceAccount name in ns, as upstream's TokenREST.
func (t *TokenRequests) Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	out := req.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		out.Spec.ExpirationSeconds = ptr(int64(3600))
	}
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = append([]string(nil), t.Audiences...)
	}
	gk := schema.GroupKind{Group: authnGV.Group, Kind: "TokenRequest"}
	var errs field.ErrorList
	switch exp := *out.Spec.ExpirationSeconds; {
	case exp < 600:
		errs = append(errs, field.Invalid(field.NewPath("spec", "expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	case exp > math.MaxUint32:
		errs = append(errs, field.TooLong(field.NewPath("spec", "expirationSeconds"), exp, math.MaxUint32))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(gk, name, errs)
	}
	saObj, err := t.Get(ctx, "serviceaccounts", ns, name)
	if err != nil {
		return nil, err
	}
	sa := saObj.(*corev1.ServiceAccount)
	var pod *corev1.Pod
	var secret *corev1.Secret
	var node *corev1.Node
	if ref := out.Spec.BoundObjectRef; ref != nil {
		var uid string
		var gr schema.GroupResource
		switch gv, _ := schema.ParseGroupVersion(ref.APIVersion); {
		case gv.Group == "" && ref.Kind == "Pod":
			gr = schema.GroupResource{Resource: "Pod"}
			o, err := t.Get(ctx, "pods", ns, ref.Name)
			if err != nil {
				return nil, err
			}
			pod = o.(*corev1.Pod)
			if pod.Spec.ServiceAccountName != name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
			}
			uid = string(pod.UID)
			if pod.Spec.NodeName != "" {
				if n, err := t.Get(ctx, "nodes", "", pod.Spec.NodeName); err == nil {
					node = n.(*corev1.Node)
				}
			}
		case gv.Group == "" && ref.Kind == "Secret":
			gr = schema.GroupResource{Resource: "Secret"}
			o, err := t.Get(ctx, "secrets", ns, ref.Name)
			if err != nil {
				return nil, err
			}
			secret = o.(*corev1.Secret)
			uid = string(secret.UID)
		case gv.Group == "" && ref.Kind == "Node":
			gr = schema.GroupResource{Resource: "Node"}
			o, err := t.Get(ctx, "nodes", "", ref.Name)
			if err != nil {
				return nil, err
			}
			node = o.(*corev1.Node)
			uid = string(node.UID)
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).String()))
		}
		if ref.UID != "" && string(ref.UID) != uid {
			return nil, apierrors.NewConflict(gr, ref.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
	}
	exp := time.Duration(*out.Spec.ExpirationSeconds) * time.Second
	if t.MaxExpiry > 0 && exp > t.MaxExpiry {
		exp = t.MaxExpiry
	}
	now := time.Now()
	if t.Now != nil {
		now = t.Now()
	}
	claims := BoundClaims(t.Issuer, sa, out.Spec.Audiences, now, exp, pod, secret, node, uuid.NewUUID())
	token, err := t.Signer.Sign(claims)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out.TypeMeta = metav1.TypeMeta{APIVersion: authnGV.String(), Kind: "TokenRequest"}
	out.Name, out.Namespace = name, ns
	out.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(now.Add(exp))}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// TokenReviewNames and SelfSubjectReviewNames are the discovery names of the two
// authentication.k8s.io/v1 review kinds (create-only, cluster-scoped, not stored).
var (
	TokenReviewNames = &registry.Names{Group: authnGV.Group, Version: authnGV.Version, Kind: "TokenReview",
		Plural: "tokenreviews", Singular: "tokenreview"}
	SelfSubjectReviewNames = &registry.Names{Group: authnGV.Group, Version: authnGV.Version, Kind: "SelfSubjectReview",
		Plural: "selfsubjectreviews", Singular: "selfsubjectreview"}
)

// TokenReviews answers TokenReview: is spec.token valid (for spec.audiences), and whose.
type TokenReviews struct{ Authenticator *Authenticator }

func (t *TokenReviews) New() runtime.Object { return &authenticationv1.TokenReview{} }
func (t *TokenReviews) Kind() schema.GroupVersionKind {
	return authnGV.WithKind("TokenReview")
}

// Create reviews the token, as upstream's TokenReview REST.
func (t *TokenReviews) Create(ctx context.Context, ns, _ string, obj runtime.Object, _ *metav1.CreateOptions) (runtime.Object, error) {
	tr, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if tr.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	out := tr.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: authnGV.String(), Kind: "TokenReview"}
	u, auds, err := t.Authenticator.AuthenticateToken(ctx, tr.Spec.Token, tr.Spec.Audiences)
	out.Status = authenticationv1.TokenReviewStatus{}
	if err != nil {
		out.Status.Error = err.Error()
		return out, nil
	}
	out.Status.Authenticated = true
	out.Status.User = userInfo(u)
	out.Status.Audiences = auds
	return out, nil
}

// SelfSubjectReviews answers SelfSubjectReview (kubectl auth whoami): the caller's user.
type SelfSubjectReviews struct{}

func (SelfSubjectReviews) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }
func (SelfSubjectReviews) Kind() schema.GroupVersionKind {
	return authnGV.WithKind("SelfSubjectReview")
}

// Create returns the caller's user.
func (SelfSubjectReviews) Create(ctx context.Context, _, _ string, obj runtime.Object, _ *metav1.CreateOptions) (runtime.Object, error) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("no user in the request"))
	}
	return &authenticationv1.SelfSubjectReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authnGV.String(), Kind: "SelfSubjectReview"},
		Status:   authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}, nil
}

func userInfo(u *request.User) authenticationv1.UserInfo {
	ui := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		ui.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			ui.Extra[k] = v
		}
	}
	return ui
}
