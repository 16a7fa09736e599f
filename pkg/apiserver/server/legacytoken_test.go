package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/authn"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// all is every warning received, one a line.
func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// TestLegacyTokenTracking: as kube-apiserver 1.33, the apiserver records in
// kube-system/kube-apiserver-legacy-service-account-token-tracking the day it started
// tracking, labels a legacy token's Secret with the day it last authenticated (one write a
// day), warns about auto-generated ones, and refuses a token whose Secret the legacy token
// cleaner marked invalid.
func TestLegacyTokenTracking(t *testing.T) {
	start := time.Now().UTC().Format(time.DateOnly)
	s := servertest.New(t, nil)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))

	deadline := time.Now().Add(30 * time.Second)
	for {
		cm, err := admin.CoreV1().ConfigMaps("kube-system").Get(ctx, server.LegacyTokenTrackingConfigMap, metav1.GetOptions{})
		if err == nil {
			since := cm.Data["since"]
			if since < start || since > time.Now().UTC().Format(time.DateOnly) {
				t.Fatalf("since = %q, want the day the apiserver started (%s)", since, start)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tracking ConfigMap: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}

	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-ci-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "ci"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// an auto-generated token: its ServiceAccount lists the Secret
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Secrets: []corev1.ObjectReference{{Name: "ci-token"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := authn.NewSigner(readECKey(t, s.Certs().ServiceAccountKey))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := sg.Sign(authn.LegacyClaims(sa, "ci-token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ci-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "ci", corev1.ServiceAccountUIDKey: string(sa.UID)}},
		Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tok)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	cfg := tokenConfig(t, s, tok)
	cfg.WarningHandler = w
	legacy := kubernetes.NewForConfigOrDie(cfg)
	use := func() {
		t.Helper()
		if _, err := legacy.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("legacy token: %v", err)
		}
	}
	lastUsed := func() (string, string) {
		t.Helper()
		sec, err := admin.CoreV1().Secrets("default").Get(ctx, "ci-token", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sec.Labels[authn.LegacyTokenLastUsedLabel], sec.ResourceVersion
	}
	today := func() string { return time.Now().UTC().Format(time.DateOnly) }

	// the first use waits for the binding to reach the authorizer's cache
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := legacy.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("legacy token: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	if day, _ := lastUsed(); day != today() {
		t.Fatalf("last used %q after a use, want %s", day, today())
	}
	if !w.has("Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.") {
		t.Errorf("warnings %q, want upstream's about auto-generated tokens", w.all())
	}
	// used again the same day: no write
	_, rv := lastUsed()
	use()
	if day, rv2 := lastUsed(); day != today() || rv2 != rv {
		t.Fatalf("second use the same day wrote the Secret: %q, resourceVersion %s -> %s", day, rv, rv2)
	}
	// last used long ago: today again
	sec, err := admin.CoreV1().Secrets("default").Get(ctx, "ci-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Labels[authn.LegacyTokenLastUsedLabel] = "2024-01-02"
	if _, err := admin.CoreV1().Secrets("default").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	use()
	if day, _ := lastUsed(); day != today() {
		t.Fatalf("last used %q after a use, want %s", day, today())
	}
	// marked invalid by the cleaner: refused
	sec, err = admin.CoreV1().Secrets("default").Get(ctx, "ci-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Labels[authn.LegacyTokenInvalidSinceLabel] = "2025-01-02"
	if sec, err = admin.CoreV1().Secrets("default").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = legacy.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	isUnauthorized(t, err)

	// a manually created token: no warning
	delete(sec.Labels, authn.LegacyTokenInvalidSinceLabel)
	if _, err := admin.CoreV1().Secrets("default").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err = admin.CoreV1().ServiceAccounts("default").Get(ctx, "ci", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa.Secrets = nil
	if _, err := admin.CoreV1().ServiceAccounts("default").Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w2 := &warnings{}
	cfg2 := rest.CopyConfig(cfg)
	cfg2.WarningHandler = w2
	if _, err := kubernetes.NewForConfigOrDie(cfg2).CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("manual legacy token: %v", err)
	}
	if w2.all() != "" {
		t.Errorf("warnings %q for a manually created token, want none", w2.all())
	}
}
