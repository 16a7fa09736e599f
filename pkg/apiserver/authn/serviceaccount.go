package authn

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/request"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Names and groups of ServiceAccount users, and the extra keys upstream sets.
const (
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	AllServiceAccountsGroup      = "system:serviceaccounts"
	ServiceAccountGroupPrefix    = "system:serviceaccounts:"
	LegacyIssuer                 = "kubernetes/serviceaccount"

	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// Ref names a bound object in the kubernetes.io claim.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// KubernetesClaim is the private "kubernetes.io" claim of a bound token.
type KubernetesClaim struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount *Ref   `json:"serviceaccount,omitempty"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
	WarnAfter      *int64 `json:"warnafter,omitempty"`
}

// Audience is the aud claim: a string or a list of strings on the wire; written as a list,
// as upstream writes it.
type Audience []string

// UnmarshalJSON accepts both forms.
func (a *Audience) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*a = Audience{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	*a = l
	return nil
}

// Claims are the claims of a ServiceAccount token, bound and legacy, with upstream's names.
type Claims struct {
	Issuer    string           `json:"iss,omitempty"`
	Subject   string           `json:"sub,omitempty"`
	Audience  Audience         `json:"aud,omitempty"`
	Expiry    *int64           `json:"exp,omitempty"`
	NotBefore *int64           `json:"nbf,omitempty"`
	IssuedAt  *int64           `json:"iat,omitempty"`
	ID        string           `json:"jti,omitempty"`
	K8s       *KubernetesClaim `json:"kubernetes.io,omitempty"`

	// Legacy (Secret-based) token claims.
	LegacyNamespace  string `json:"kubernetes.io/serviceaccount/namespace,omitempty"`
	LegacySecretName string `json:"kubernetes.io/serviceaccount/secret.name,omitempty"`
	LegacySAName     string `json:"kubernetes.io/serviceaccount/service-account.name,omitempty"`
	LegacySAUID      string `json:"kubernetes.io/serviceaccount/service-account.uid,omitempty"`
}

// Getter reads one object of a core/v1 resource ("serviceaccounts", "pods", "secrets",
// "nodes"); the registry's stores, in the server.
type Getter func(ctx context.Context, resource, ns, name string) (runtime.Object, error)

// leeway is how far exp and nbf may be off, as upstream's go-jose default.
const leeway = time.Minute

// ServiceAccounts verifies ServiceAccount tokens, bound (issued by TokenRequest) and legacy
// (kept in kubernetes.io/service-account-token Secrets).
type ServiceAccounts struct {
	Issuers   []string // the first one issues
	Keys      []*PublicKey
	Audiences []string // --api-audiences
	Get       Getter
	Now       func() time.Time
	// MarkLegacyTokenUsed labels the Secret of a legacy token that authenticated with
	// LegacyTokenLastUsedLabel=day, if its uid is still secret's (upstream's merge patch with
	// the uid as precondition); nil: no tracking.
	MarkLegacyTokenUsed func(ctx context.Context, secret *corev1.Secret, day string) error
	// Log reports what tracking could not write; nil: slog's default.
	Log *slog.Logger
}

// Upstream's labels on the Secret of a legacy token (k8s.io/kubernetes pkg/serviceaccount):
// the day it last authenticated, and the day kube-controller-manager's legacy token cleaner
// found it unused, after which it no longer authenticates.
const (
	LegacyTokenLastUsedLabel     = "kubernetes.io/legacy-token-last-used"
	LegacyTokenInvalidSinceLabel = "kubernetes.io/legacy-token-invalid-since"
)

func (v *ServiceAccounts) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// errNotMine: the token is not a JWT of one of our issuers; the next authenticator may try.
var errNotMine = errors.New("not a service account token")

// AuthenticateToken verifies token for audiences (the API audiences when empty) and
// returns its user and the audiences it is valid for.
func (v *ServiceAccounts) AuthenticateToken(ctx context.Context, token string, audiences []string) (*request.User, []string, error) {
	j, err := parseJWS(token)
	if err != nil {
		return nil, nil, errNotMine
	}
	var c Claims
	if err := json.Unmarshal(j.payload, &c); err != nil {
		return nil, nil, errNotMine
	}
	legacy := c.Issuer == LegacyIssuer
	if !legacy && !slices.Contains(v.Issuers, c.Issuer) {
		return nil, nil, errNotMine
	}
	if err := j.verify(v.Keys); err != nil {
		return nil, nil, err
	}
	if len(audiences) == 0 {
		audiences = v.Audiences
	}
	now := v.now()
	if legacy {
		return v.legacy(ctx, token, &c, audiences)
	}
	if c.Expiry == nil || now.After(time.Unix(*c.Expiry, 0).Add(leeway)) {
		return nil, nil, errors.New("service account token has expired")
	}
	if c.NotBefore != nil && now.Add(leeway).Before(time.Unix(*c.NotBefore, 0)) {
		return nil, nil, errors.New("service account token is not valid yet")
	}
	var auds []string
	for _, a := range audiences {
		if slices.Contains(c.Audience, a) {
			auds = append(auds, a)
		}
	}
	if len(auds) == 0 {
		return nil, nil, errors.New("token audiences is invalid for the target audiences")
	}
	k := c.K8s
	if k == nil || k.ServiceAccount == nil || k.Namespace == "" || k.ServiceAccount.Name == "" || c.Subject != ServiceAccountUsernamePrefix+k.Namespace+":"+k.ServiceAccount.Name {
		return nil, nil, errors.New("service account token claims are invalid")
	}
	if err := v.checkLive(ctx, "serviceaccounts", k.Namespace, k.ServiceAccount, now); err != nil {
		return nil, nil, err
	}
	u := saUser(k.Namespace, k.ServiceAccount.Name, k.ServiceAccount.UID)
	switch {
	case k.Pod != nil:
		if err := v.checkLive(ctx, "pods", k.Namespace, k.Pod, now); err != nil {
			return nil, nil, err
		}
		u.Extra[ExtraPodName] = []string{k.Pod.Name}
		u.Extra[ExtraPodUID] = []string{k.Pod.UID}
	case k.Secret != nil:
		if err := v.checkLive(ctx, "secrets", k.Namespace, k.Secret, now); err != nil {
			return nil, nil, err
		}
	case k.Node != nil:
		if err := v.checkLive(ctx, "nodes", "", k.Node, now); err != nil {
			return nil, nil, err
		}
	}
	if k.Node != nil {
		u.Extra[ExtraNodeName] = []string{k.Node.Name}
		u.Extra[ExtraNodeUID] = []string{k.Node.UID}
	}
	if c.ID != "" {
		u.Extra[ExtraCredentialID] = []string{"JTI=" + c.ID}
	}
	return u, auds, nil
}

// legacy honours a token of a kubernetes.io/service-account-token Secret while the Secret
// exists and holds this very token, and its ServiceAccount exists with the same uid.
func (v *ServiceAccounts) legacy(ctx context.Context, token string, c *Claims, audiences []string) (*request.User, []string, error) {
	if c.LegacyNamespace == "" || c.LegacySAName == "" || c.LegacySecretName == "" || c.Subject != ServiceAccountUsernamePrefix+c.LegacyNamespace+":"+c.LegacySAName {
		return nil, nil, errors.New("service account token claims are invalid")
	}
	// Legacy tokens carry no audience: they are good for the API's own audiences.
	var auds []string
	for _, a := range audiences {
		if slices.Contains(v.Audiences, a) {
			auds = append(auds, a)
		}
	}
	if len(auds) == 0 {
		return nil, nil, errors.New("token audiences is invalid for the target audiences")
	}
	obj, err := v.Get(ctx, "secrets", c.LegacyNamespace, c.LegacySecretName)
	if err != nil {
		return nil, nil, liveErr("secret", c.LegacyNamespace, c.LegacySecretName, err)
	}
	sec, ok := obj.(*corev1.Secret)
	if !ok || sec.DeletionTimestamp != nil || subtle.ConstantTimeCompare(sec.Data[corev1.ServiceAccountTokenKey], []byte(token)) != 1 {
		return nil, nil, fmt.Errorf("token does not match secret %s/%s", c.LegacyNamespace, c.LegacySecretName)
	}
	saObj, err := v.live(ctx, "serviceaccounts", c.LegacyNamespace, &Ref{Name: c.LegacySAName, UID: c.LegacySAUID}, v.now())
	if err != nil {
		return nil, nil, err
	}
	if sec.Labels[LegacyTokenInvalidSinceLabel] != "" {
		v.markLegacyTokenUsed(ctx, sec)
		return nil, nil, fmt.Errorf("the token in secret %s/%s for service account %s/%s has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '%s' label from the secret to temporarily allow use of this token",
			c.LegacyNamespace, c.LegacySecretName, c.LegacyNamespace, c.LegacySAName, LegacyTokenInvalidSinceLabel)
	}
	if sa, ok := saObj.(*corev1.ServiceAccount); ok && slices.ContainsFunc(sa.Secrets, func(r corev1.ObjectReference) bool { return r.Name == sec.Name }) {
		request.AddWarning(ctx, "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.")
	}
	v.markLegacyTokenUsed(ctx, sec)
	return saUser(c.LegacyNamespace, c.LegacySAName, c.LegacySAUID), auds, nil
}

// markLegacyTokenUsed records today (UTC) on the token's Secret unless it holds today or
// tomorrow already (another apiserver's clock), so a token costs at most one write a day.
// A failed write is logged, not the request's failure, as upstream.
func (v *ServiceAccounts) markLegacyTokenUsed(ctx context.Context, sec *corev1.Secret) {
	if v.MarkLegacyTokenUsed == nil {
		return
	}
	now := v.now().UTC()
	today, tomorrow := now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)
	if last := sec.Labels[LegacyTokenLastUsedLabel]; last == today || last == tomorrow {
		return
	}
	if err := v.MarkLegacyTokenUsed(ctx, sec, today); err != nil {
		log := v.Log
		if log == nil {
			log = slog.Default()
		}
		log.Error("failed to label legacy service account token with last-used date", "secret", sec.Namespace+"/"+sec.Name, "err", err)
	}
}

// checkLive: the object ref names must exist with the same uid and not have been deleted
// more than a minute ago (upstream's grace for graceful deletion).
func (v *ServiceAccounts) checkLive(ctx context.Context, resource, ns string, ref *Ref, now time.Time) error {
	_, err := v.live(ctx, resource, ns, ref, now)
	return err
}

// live is checkLive returning the object.
func (v *ServiceAccounts) live(ctx context.Context, resource, ns string, ref *Ref, now time.Time) (runtime.Object, error) {
	what := strings.TrimSuffix(resource, "s")
	obj, err := v.Get(ctx, resource, ns, ref.Name)
	if err != nil {
		return nil, liveErr(what, ns, ref.Name, err)
	}
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if ref.UID != "" && string(m.GetUID()) != ref.UID {
		return nil, fmt.Errorf("%s UID (%s) does not match claim (%s)", what, m.GetUID(), ref.UID)
	}
	if dt := m.GetDeletionTimestamp(); dt != nil && dt.Time.Before(now.Add(-leeway)) {
		return nil, fmt.Errorf("%s %s/%s has been deleted", what, ns, ref.Name)
	}
	return obj, nil
}

func liveErr(what, ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s has been deleted", what, ns, name)
	}
	return fmt.Errorf("look up %s %s/%s: %w", what, ns, name, err)
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

func saUser(ns, name, uid string) *request.User {
	return &request.User{
		Name:   ServiceAccountUsernamePrefix + ns + ":" + name,
		UID:    uid,
		Groups: []string{AllServiceAccountsGroup, ServiceAccountGroupPrefix + ns, request.AllAuthenticated},
		Extra:  map[string][]string{},
	}
}

// BoundClaims are the claims TokenRequest signs: sa in ns, for audiences, valid from now
// for exp, bound to at most one of pod, secret or node (a pod's node rides along, as
// upstream adds it).
func BoundClaims(issuer string, sa *corev1.ServiceAccount, audiences []string, now time.Time, exp time.Duration, pod *corev1.Pod, secret *corev1.Secret, node *corev1.Node, jti types.UID) *Claims {
	iat, e := now.Unix(), now.Add(exp).Unix()
	k := &KubernetesClaim{Namespace: sa.Namespace, ServiceAccount: &Ref{Name: sa.Name, UID: string(sa.UID)}}
	if pod != nil {
		k.Pod = &Ref{Name: pod.Name, UID: string(pod.UID)}
	}
	if secret != nil {
		k.Secret = &Ref{Name: secret.Name, UID: string(secret.UID)}
	}
	if node != nil {
		k.Node = &Ref{Name: node.Name, UID: string(node.UID)}
	}
	return &Claims{
		Issuer: issuer, Subject: ServiceAccountUsernamePrefix + sa.Namespace + ":" + sa.Name,
		Audience: audiences, Expiry: &e, IssuedAt: &iat, NotBefore: &iat, ID: string(jti), K8s: k,
	}
}

// LegacyClaims are the claims of a Secret-held token (what the token controller wrote).
func LegacyClaims(sa *corev1.ServiceAccount, secretName string) *Claims {
	return &Claims{
		Issuer: LegacyIssuer, Subject: ServiceAccountUsernamePrefix + sa.Namespace + ":" + sa.Name,
		LegacyNamespace: sa.Namespace, LegacySecretName: secretName, LegacySAName: sa.Name, LegacySAUID: string(sa.UID),
	}
}
