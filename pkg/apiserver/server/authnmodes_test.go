package server_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestAnonymousOffWithAlwaysAllow: AlwaysAllow anywhere in --authorization-mode turns
// anonymous authentication off, as kube-apiserver does: a request without credentials is
// 401, not allowed by AlwaysAllow. Without AlwaysAllow it is system:anonymous, whom RBAC
// refuses.
func TestAnonymousOffWithAlwaysAllow(t *testing.T) {
	for _, tc := range []struct {
		modes string
		code  int
	}{
		{"AlwaysAllow", http.StatusUnauthorized},
		{"Node,RBAC,AlwaysAllow", http.StatusUnauthorized},
		{"RBAC, AlwaysAllow", http.StatusUnauthorized},
		{"AlwaysAllow,RBAC", http.StatusUnauthorized},
		{"Node,RBAC", http.StatusForbidden},
	} {
		t.Run(tc.modes, func(t *testing.T) {
			s := servertest.New(t, func(c *server.Config) { c.AuthorizationMode = tc.modes })
			anon := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(servertest.RestConfig(t, s)))
			_, err := anon.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
			var status apierrors.APIStatus
			if !errors.As(err, &status) || int(status.Status().Code) != tc.code {
				t.Fatalf("anonymous list of namespaces: %v, want %d", err, tc.code)
			}
		})
	}
}

// frontProxyPKI is PKI as kubeadm lays it out for an apiserver given its own files: a
// serving certificate and a front-proxy CA, and no --client-ca-file.
type frontProxyPKI struct {
	*certs.Bundle
	// stranger is a certificate of the front-proxy CA with a name the allowed names refuse.
	strangerCert, strangerKey []byte
}

func newFrontProxyPKI(t *testing.T) frontProxyPKI {
	t.Helper()
	b, err := certs.Ensure(filepath.Join(t.TempDir(), "pki"), certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fp := *b
	fp.CACert, fp.CAKey = b.FrontProxyCACert, b.FrontProxyCAKey
	cert, key, err := fp.IssueClient("mallory", []string{"system:masters"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return frontProxyPKI{Bundle: b, strangerCert: cert, strangerKey: key}
}

// TestFrontProxyCertificateIsNoUser: with token authentication and no --client-ca-file,
// the handshake accepts the front-proxy CA's certificates, but they authenticate only front
// proxies, with an allowed name and a username header, as upstream's request-header
// authenticator: the proxy's certificate alone is nobody (anonymous, or 401 with anonymous
// off), and one with another name is 401 even with the headers.
func TestFrontProxyCertificateIsNoUser(t *testing.T) {
	pki := newFrontProxyPKI(t)
	start := func(t *testing.T, anonymous bool) *rest.Config {
		s := servertest.New(t, func(c *server.Config) {
			c.TLSCertFile, c.TLSKeyFile = pki.ServingCert, pki.ServingKey
			c.TokenAuthFile = writeTokenFile(t)
			c.RequestHeaderClientCAFile = pki.FrontProxyCACert
			c.RequestHeaderAllowedNames = []string{certs.FrontProxyClientName}
			c.AnonymousAuth = anonymous
		})
		return &rest.Config{Host: s.URL(), TLSClientConfig: rest.TLSClientConfig{CAData: pki.CAPEM}}
	}
	whoamiWith := func(rc *rest.Config, headers http.Header) (authenticationv1.UserInfo, error) {
		rc = rest.CopyConfig(rc)
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				for k, v := range headers {
					r.Header[k] = v
				}
				return rt.RoundTrip(r)
			})
		})
		res, err := kubernetes.NewForConfigOrDie(rc).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return authenticationv1.UserInfo{}, err
		}
		return res.Status.UserInfo, nil
	}
	bob := http.Header{"X-Remote-User": {"bob"}}

	for _, anonymous := range []bool{true, false} {
		t.Run("anonymous "+map[bool]string{true: "on", false: "off"}[anonymous], func(t *testing.T) {
			base := start(t, anonymous)
			proxy := rest.CopyConfig(base)
			proxy.CertFile, proxy.KeyFile = pki.FrontProxyClientCert, pki.FrontProxyClientKey
			stranger := rest.CopyConfig(base)
			stranger.CertData, stranger.KeyData = pki.strangerCert, pki.strangerKey

			// The front proxy, for bob: bob.
			if u, err := whoamiWith(proxy, bob); err != nil || u.Username != "bob" {
				t.Fatalf("front proxy for bob: %+v, %v", u, err)
			}
			// The front proxy's certificate alone is nobody: anonymous, whom RBAC refuses
			// the review, or 401 with anonymous off.
			_, err := whoamiWith(proxy, nil)
			if anonymous {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:anonymous"`) {
					t.Fatalf("front-proxy certificate without X-Remote-User: %v, want system:anonymous refused", err)
				}
			} else {
				isUnauthorized(t, err)
			}
			// A front-proxy CA certificate with a name the allowed names refuse: 401, with
			// or without headers.
			for _, h := range []http.Header{nil, bob} {
				_, err := whoamiWith(stranger, h)
				isUnauthorized(t, err)
			}
			// Tokens still authenticate, beside a front proxy's certificate too.
			withToken := rest.CopyConfig(base)
			withToken.BearerToken = "alice-token"
			if u, err := whoamiWith(withToken, nil); err != nil || u.Username != "alice" {
				t.Fatalf("alice's token: %+v, %v", u, err)
			}
			proxy.BearerToken = "alice-token"
			if u, err := whoamiWith(proxy, nil); err != nil || u.Username != "alice" {
				t.Fatalf("alice's token over the front proxy's connection: %+v, %v", u, err)
			}
		})
	}
}
