package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/authn"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// tokenConfig is the admin client config with the certificate replaced by token ("" for
// no credentials at all).
func tokenConfig(t testing.TB, s *server.Server, token string) *rest.Config {
	t.Helper()
	c := rest.AnonymousClientConfig(servertest.RestConfig(t, s))
	c.BearerToken = token
	return c
}

// tokenKubeconfig writes a kubeconfig for s that authenticates with token ("": none).
func tokenKubeconfig(t *testing.T, s *server.Server, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.ClientCertificate, ai.ClientKey, ai.ClientCertificateData, ai.ClientKeyData = "", "", nil, nil
		ai.Token = token
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeTokenFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(p, []byte("alice-token,alice,uid-alice,\"dev,ops\"\nbob-token,bob,uid-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// whoami runs kubectl auth whoami with kubeconfig and returns the user it reports.
func whoami(t *testing.T, kubeconfig string) authenticationv1.UserInfo {
	t.Helper()
	k := newKubectlEnv(t, kubeconfig)
	var r authenticationv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(k.ok("auth", "whoami", "-o", "json")), &r); err != nil {
		t.Fatal(err)
	}
	return r.Status.UserInfo
}

func isUnauthorized(t *testing.T, err error) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Reason != metav1.StatusReasonUnauthorized || se.ErrStatus.Code != 401 || se.ErrStatus.Message != "Unauthorized" {
		t.Fatalf("err = %#v, want upstream's 401 Unauthorized Status", err)
	}
}

// TestAuthnKubectl: certificate, static-token and ServiceAccount-token identities with the
// real kubectl: whoami, no and bad credentials, create token, bound tokens that end with
// their pod or ServiceAccount.
func TestAuthnKubectl(t *testing.T) {
	// Authentication alone: AlwaysAllow, which (as upstream) also turns anonymous access off,
	// so that a request's fate is its credentials'.
	s := servertest.New(t, func(c *server.Config) { c.TokenAuthFile = writeTokenFile(t); c.AuthorizationMode = "AlwaysAllow" })
	admin := newKubectlEnv(t, s.KubeconfigPath())

	t.Run("whoami", func(t *testing.T) {
		u := whoami(t, s.KubeconfigPath())
		if u.Username != "admin" || strings.Join(u.Groups, ",") != "system:masters,system:authenticated" {
			t.Errorf("admin whoami = %+v", u)
		}
		u = whoami(t, tokenKubeconfig(t, s, "alice-token"))
		if u.Username != "alice" || u.UID != "uid-alice" || strings.Join(u.Groups, ",") != "dev,ops,system:authenticated" {
			t.Errorf("alice whoami = %+v", u)
		}
	})
	// (kubectl without any credentials prompts for a user name on stdin: client-go covers
	// that case in TestAuthnClientGo.)
	t.Run("bad token", func(t *testing.T) {
		k := newKubectlEnv(t, tokenKubeconfig(t, s, "no-such-token"))
		// kubectl's discovery reports upstream's 401 this way (client-go decodes discovery
		// errors without the Status); the resource request itself says Unauthorized.
		k.fails("error: You must be logged in to the server", "get", "namespaces")
		k.fails("error: You must be logged in to the server (Unauthorized)", "get", "--raw", "/api/v1/namespaces")
		k.fails("error: You must be logged in to the server (Unauthorized)", "get", "--raw", "/healthz")
	})

	admin.ok("create", "serviceaccount", "robot")
	t.Run("create token", func(t *testing.T) {
		token := strings.TrimSpace(admin.ok("create", "token", "robot"))
		kc := tokenKubeconfig(t, s, token)
		u := whoami(t, kc)
		if u.Username != "system:serviceaccount:default:robot" || strings.Join(u.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:default,system:authenticated" || u.UID == "" {
			t.Errorf("robot whoami = %+v", u)
		}
		if id := u.Extra[authn.ExtraCredentialID]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
			t.Errorf("credential-id = %v", id)
		}
		k := newKubectlEnv(t, kc)
		contains(t, k.ok("get", "serviceaccounts"), "robot")
	})
	t.Run("pod-bound token ends with its pod", func(t *testing.T) {
		pod := admin.file("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: worker}\nspec:\n  serviceAccountName: robot\n  containers: [{name: c, image: busybox}]\n")
		admin.ok("create", "-f", pod)
		token := strings.TrimSpace(admin.ok("create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name", "worker"))
		kc := tokenKubeconfig(t, s, token)
		u := whoami(t, kc)
		if got := u.Extra[authn.ExtraPodName]; len(got) != 1 || got[0] != "worker" {
			t.Errorf("pod-name extra = %v", u.Extra)
		}
		admin.ok("delete", "pod", "worker", "--grace-period=0", "--force", "--wait=true")
		k := newKubectlEnv(t, kc)
		k.fails("error: You must be logged in to the server (Unauthorized)", "get", "--raw", "/api/v1/namespaces/default/serviceaccounts")
	})
	t.Run("token ends with its service account", func(t *testing.T) {
		admin.ok("create", "serviceaccount", "temp")
		token := strings.TrimSpace(admin.ok("create", "token", "temp"))
		kc := tokenKubeconfig(t, s, token)
		k := newKubectlEnv(t, kc)
		k.ok("get", "serviceaccounts")
		admin.ok("delete", "serviceaccount", "temp")
		k.fails("error: You must be logged in to the server (Unauthorized)", "get", "--raw", "/api/v1/namespaces/default/serviceaccounts")
		// Same name, new uid: the old token stays dead.
		admin.ok("create", "serviceaccount", "temp")
		k.fails("error: You must be logged in to the server (Unauthorized)", "get", "--raw", "/api/v1/namespaces/default/serviceaccounts")
	})
	t.Run("token request validation", func(t *testing.T) {
		admin.fails("may not specify a duration less than 10 minutes", "create", "token", "robot", "--duration", "5m")
		admin.fails(`serviceaccounts "nobody" not found`, "create", "token", "nobody")
	})
}

// signWith mints a bound token for sa with key, valid from iat for exp.
func signWith(t *testing.T, key *ecdsa.PrivateKey, issuer string, sa *corev1.ServiceAccount, iat time.Time, exp time.Duration) string {
	t.Helper()
	sg, err := authn.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := sg.Sign(authn.BoundClaims(issuer, sa, []string{issuer}, iat, exp, nil, nil, nil, types.UID("jti-1")))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func readECKey(t *testing.T, path string) *ecdsa.PrivateKey {
	t.Helper()
	k, err := authn.ReadPrivateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*ecdsa.PrivateKey)
}

func writeKey(t *testing.T, dir, name string, key *ecdsa.PrivateKey, public bool) string {
	t.Helper()
	var blk *pem.Block
	if public {
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		blk = &pem.Block{Type: "PUBLIC KEY", Bytes: der}
	} else {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		blk = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuthnClientGo: expired tokens, TokenReview, the OIDC documents and JWKS, the
// extension-apiserver-authentication ConfigMap, with client-go.
func TestAuthnClientGo(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.TokenAuthFile = writeTokenFile(t) })
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	// Every authenticated user may do anything here (RBAC), so that what a request meets
	// is decided by its credentials: 401 without good ones, 403 for the anonymous user.
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-authenticated-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of the binding through its watch.
	eventuallyOK(t, "the binding reaches the authorizer", func() error {
		_, err := kubernetes.NewForConfigOrDie(tokenConfig(t, s, "bob-token")).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	})
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := readECKey(t, s.Certs().ServiceAccountKey)
	issuer := server.DefaultServiceAccountIssuer

	t.Run("anonymous reaches public paths only", func(t *testing.T) {
		anon := kubernetes.NewForConfigOrDie(tokenConfig(t, s, ""))
		if _, err := anon.Discovery().ServerVersion(); err != nil {
			t.Fatalf("anonymous /version: %v", err)
		}
		raw, err := anon.Discovery().RESTClient().Get().AbsPath("/healthz").DoRaw(ctx)
		if err != nil || string(raw) != "ok" {
			t.Fatalf("anonymous /healthz: %q, %v", raw, err)
		}
	})
	t.Run("no credentials and bad token", func(t *testing.T) {
		for _, tok := range []string{"nope", "a.b.c"} {
			_, err := kubernetes.NewForConfigOrDie(tokenConfig(t, s, tok)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			isUnauthorized(t, err)
		}
		// No credentials: the anonymous user, whom RBAC refuses (upstream's 403).
		_, err := kubernetes.NewForConfigOrDie(tokenConfig(t, s, "")).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:anonymous" cannot list resource "namespaces"`) {
			t.Fatalf("anonymous list: %v, want 403 for system:anonymous", err)
		}
	})
	t.Run("expired token", func(t *testing.T) {
		live := signWith(t, key, issuer, sa, time.Now(), time.Hour)
		if _, err := kubernetes.NewForConfigOrDie(tokenConfig(t, s, live)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("live token: %v", err)
		}
		expired := signWith(t, key, issuer, sa, time.Now().Add(-3*time.Hour), time.Hour)
		_, err := kubernetes.NewForConfigOrDie(tokenConfig(t, s, expired)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		isUnauthorized(t, err)
	})
	t.Run("token request through client-go", func(t *testing.T) {
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "ci", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Status.Token == "" || time.Until(tr.Status.ExpirationTimestamp.Time) < 50*time.Minute {
			t.Fatalf("status = %+v", tr.Status)
		}
		// Meant for vault, not for this API.
		_, err = kubernetes.NewForConfigOrDie(tokenConfig(t, s, tr.Status.Token)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		isUnauthorized(t, err)
		rev, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rev.Status.Authenticated || rev.Status.User.Username != "system:serviceaccount:default:ci" || rev.Status.User.UID != string(sa.UID) || strings.Join(rev.Status.Audiences, ",") != "vault" {
			t.Fatalf("review = %+v", rev.Status)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "ci", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "missing"}}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("bound to a missing secret: %v, want NotFound", err)
		}
		sec, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "anchor"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "ci", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "anchor", UID: "other"}}}, metav1.CreateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("bound with a wrong uid: %v, want Conflict", err)
		}
		tr, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "ci", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "anchor", UID: sec.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound := kubernetes.NewForConfigOrDie(tokenConfig(t, s, tr.Status.Token))
		if _, err := bound.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("secret-bound token: %v", err)
		}
		if err := admin.CoreV1().Secrets("default").Delete(ctx, "anchor", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = bound.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		isUnauthorized(t, err)
	})
	t.Run("legacy secret token", func(t *testing.T) {
		sg, err := authn.NewSigner(key)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := sg.Sign(authn.LegacyClaims(sa, "ci-token"))
		if err != nil {
			t.Fatal(err)
		}
		legacy := kubernetes.NewForConfigOrDie(tokenConfig(t, s, tok))
		_, err = legacy.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		isUnauthorized(t, err) // no Secret holds it yet
		_, err = admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ci-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "ci", corev1.ServiceAccountUIDKey: string(sa.UID)}},
			Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tok)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := legacy.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("legacy token with its secret: %v", err)
		}
		if err := admin.CoreV1().Secrets("default").Delete(ctx, "ci-token", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = legacy.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		isUnauthorized(t, err)
	})
	t.Run("token review", func(t *testing.T) {
		for _, tc := range []struct {
			token, user string
			ok          bool
		}{
			{"alice-token", "alice", true},
			{"nope", "", false},
			{signWith(t, key, issuer, sa, time.Now(), time.Hour), "system:serviceaccount:default:ci", true},
		} {
			rev, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tc.token}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rev.Status.Authenticated != tc.ok || rev.Status.User.Username != tc.user || (!tc.ok && rev.Status.Error == "") {
				t.Errorf("review of %q = %+v", tc.user, rev.Status)
			}
		}
		_, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("empty token: %v, want BadRequest", err)
		}
	})
	t.Run("discovery", func(t *testing.T) {
		rl, err := admin.Discovery().ServerResourcesForGroupVersion("authentication.k8s.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rl.APIResources {
			got[r.Name] = strings.Join(r.Verbs, ",")
		}
		if got["tokenreviews"] != "create" || got["selfsubjectreviews"] != "create" {
			t.Errorf("authentication.k8s.io/v1 resources = %v", got)
		}
		rl, err = admin.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rl.APIResources {
			if r.Name == "serviceaccounts/token" {
				found = r.Kind == "TokenRequest" && r.Group == "authentication.k8s.io" && strings.Join(r.Verbs, ",") == "create"
			}
		}
		if !found {
			t.Errorf("serviceaccounts/token missing or wrong in discovery: %+v", rl.APIResources)
		}
	})
	t.Run("openid discovery and jwks", func(t *testing.T) {
		rc := admin.Discovery().RESTClient()
		raw, err := rc.Get().AbsPath(authn.OpenIDConfigPath).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var oc authn.OpenIDConfig
		if err := json.Unmarshal(raw, &oc); err != nil {
			t.Fatal(err)
		}
		if oc.Issuer != issuer || oc.JWKSURI != issuer+authn.JWKSPath || strings.Join(oc.SigningAlgs, ",") != "ES256" || strings.Join(oc.ResponseTypes, ",") != "id_token" || strings.Join(oc.SubjectTypes, ",") != "public" {
			t.Errorf("openid-configuration = %+v", oc)
		}
		raw, err = rc.Get().AbsPath(authn.JWKSPath).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var set authn.JWKS
		if err := json.Unmarshal(raw, &set); err != nil || len(set.Keys) != 1 {
			t.Fatalf("jwks %s: %v", raw, err)
		}
		// Verify a minted token with nothing but the published key.
		jwk := set.Keys[0]
		x, _ := base64.RawURLEncoding.DecodeString(jwk.X)
		y, _ := base64.RawURLEncoding.DecodeString(jwk.Y)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			t.Fatalf("jwk %+v: %v", jwk, err)
		}
		der, _ := x509.MarshalPKIXPublicKey(pub)
		sum := sha256.Sum256(der)
		if jwk.Kid != base64.RawURLEncoding.EncodeToString(sum[:]) || jwk.Alg != "ES256" || jwk.Use != "sig" || jwk.Kty != "EC" || jwk.Crv != "P-256" {
			t.Errorf("jwk = %+v", jwk)
		}
		tok := signWith(t, key, issuer, sa, time.Now(), time.Hour)
		parts := strings.Split(tok, ".")
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if len(sig) != 64 || !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			t.Error("the JWKS key does not verify a token the server accepts")
		}
	})
	t.Run("authentication configmap", func(t *testing.T) {
		cm, err := admin.CoreV1().ConfigMaps("kube-system").Get(ctx, server.AuthenticationConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["client-ca-file"] != string(s.Certs().CAPEM) {
			t.Errorf("client-ca-file = %q, want the CA", cm.Data["client-ca-file"])
		}
	})
}

// TestAuthnKeyRotation: a token signed by the old key works while both keys are listed;
// one signed by an unlisted key does not.
func TestAuthnKeyRotation(t *testing.T) {
	dir := t.TempDir()
	gen := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	oldKey, newKey, strange := gen(), gen(), gen()
	s := servertest.New(t, func(c *server.Config) {
		c.ServiceAccountSigningKeyFile = writeKey(t, dir, "new.key", newKey, false)
		c.ServiceAccountKeyFiles = []string{writeKey(t, dir, "old.pub", oldKey, true), c.ServiceAccountSigningKeyFile}
		c.ServiceAccountIssuers = []string{"https://new.example", "https://old.example"}
		c.AnonymousAuth = false
		c.AuthorizationMode = "AlwaysAllow"
	})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		key    *ecdsa.PrivateKey
		issuer string
		ok     bool
	}{
		{"old key, old issuer", oldKey, "https://old.example", true},
		{"new key, new issuer", newKey, "https://new.example", true},
		{"unlisted key", strange, "https://new.example", false},
		{"unknown issuer", newKey, "https://other.example", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The audience is the first issuer: --api-audiences defaults to the issuers.
			sg, _ := authn.NewSigner(tc.key)
			tok, err := sg.Sign(authn.BoundClaims(tc.issuer, sa, []string{"https://new.example"}, time.Now(), time.Hour, nil, nil, nil, "j"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = kubernetes.NewForConfigOrDie(tokenConfig(t, s, tok)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok {
				isUnauthorized(t, err)
			}
		})
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "ci", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(tokenConfig(t, s, tr.Status.Token)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("issued token: %v", err)
	}
	// --anonymous-auth=false: even public paths need credentials.
	_, err = kubernetes.NewForConfigOrDie(tokenConfig(t, s, "")).Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx)
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("anonymous /version with --anonymous-auth=false: %v, want 401", err)
	}
}

// BenchmarkAuthn measures a GET of one namespace per identity: the ServiceAccount token's
// extra cost is its signature check and the registry reads of its ServiceAccount (and
// bound object).
func BenchmarkAuthn(b *testing.B) {
	s := servertest.New(b, func(c *server.Config) { c.TokenAuthFile = writeTokenFile(b) })
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(b, s))
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "bench", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []struct {
		name string
		cs   kubernetes.Interface
	}{
		{"certificate", admin},
		{"static-token", kubernetes.NewForConfigOrDie(tokenConfig(b, s, "alice-token"))},
		{"serviceaccount-token", kubernetes.NewForConfigOrDie(tokenConfig(b, s, tr.Status.Token))},
	} {
		b.Run(id.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := id.cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
