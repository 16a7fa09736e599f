package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/authn"
	"github.com/hacp/hacp/pkg/apiserver/authz"
	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/config"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultServiceAccountIssuer is the issuer when --service-account-issuer is not given
// (kubeadm's).
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// authnState is what authentication needs while serving.
type authnState struct {
	authn         *authn.Authenticator
	oidc, jwks    http.Handler // nil when issuer discovery is off
	tokenRequests *authn.TokenRequests
}

// validateAuthn checks the authentication settings and reads every file they name, so that
// an unreadable certificate, key or token file stops the start with the flag's name.
func (c *Config) validateAuthn() []error {
	var errs []error
	if c.TLSCertFile != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile); err != nil {
			errs = append(errs, config.FieldErrorf("tls-cert-file", "load serving certificate and key: %v", err))
		}
		if c.ClientCAFile == "" && c.TokenAuthFile == "" {
			errs = append(errs, config.FieldErrorf("tls-cert-file", "needs client-ca-file (or token-auth-file): without a client CA no client certificate verifies and nobody can authenticate"))
		}
	}
	if c.ClientCAFile != "" {
		if _, err := readCAPool(c.ClientCAFile); err != nil {
			errs = append(errs, config.FieldErrorf("client-ca-file", "%v", err))
		}
	}
	if c.TokenAuthFile != "" {
		if _, err := authn.ReadTokenFile(c.TokenAuthFile); err != nil {
			errs = append(errs, config.FieldErrorf("token-auth-file", "%v", err))
		}
	}
	if c.ServiceAccountSigningKeyFile != "" {
		if _, err := authn.ReadPrivateKey(c.ServiceAccountSigningKeyFile); err != nil {
			errs = append(errs, config.FieldErrorf("service-account-signing-key-file", "%v", err))
		}
	}
	for _, f := range c.ServiceAccountKeyFiles {
		if _, err := authn.ReadPublicKeys(f); err != nil {
			errs = append(errs, config.FieldErrorf("service-account-key-file", "%v", err))
		}
	}
	if c.RequestHeaderClientCAFile != "" {
		if _, err := readCAPool(c.RequestHeaderClientCAFile); err != nil {
			errs = append(errs, config.FieldErrorf("requestheader-client-ca-file", "%v", err))
		}
	}
	if (c.ProxyClientCertFile == "") != (c.ProxyClientKeyFile == "") {
		errs = append(errs, config.FieldErrorf("proxy-client-cert-file", "proxy-client-cert-file and proxy-client-key-file go together"))
	} else if c.ProxyClientCertFile != "" {
		if _, err := tls.LoadX509KeyPair(c.ProxyClientCertFile, c.ProxyClientKeyFile); err != nil {
			errs = append(errs, config.FieldErrorf("proxy-client-cert-file", "load proxy client certificate and key: %v", err))
		}
	}
	if len(c.ServiceAccountIssuers) == 0 {
		errs = append(errs, config.FieldErrorf("service-account-issuer", "must not be empty"))
	}
	for _, iss := range c.ServiceAccountIssuers {
		if strings.Contains(iss, ":") {
			if _, err := url.Parse(iss); err != nil {
				errs = append(errs, config.FieldErrorf("service-account-issuer", "%q contained a ':' but was not a valid URL: %v", iss, err))
			}
		}
	}
	if c.ServiceAccountJWKSURI != "" {
		if u, err := url.Parse(c.ServiceAccountJWKSURI); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, config.FieldErrorf("service-account-jwks-uri", "%q is not an https URL", c.ServiceAccountJWKSURI))
		}
	}
	if m := c.ServiceAccountMaxTokenExpiration; m != 0 && (m < time.Hour || m > (1<<32)*time.Second) {
		errs = append(errs, config.FieldErrorf("service-account-max-token-expiration", "must be between 1 hour and 2^32 seconds, not %v", m))
	}
	return errs
}

func readCAPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}

// setupAuthn builds the authenticators from the configuration and adds the token
// subresource to serviceaccounts when a signing key is configured (or generated).
func (s *Server) setupAuthn() error {
	cfg := s.cfg
	anonymous := cfg.AnonymousAuth
	if anonymous && alwaysAllows(cfg.AuthorizationMode) {
		// As kube-apiserver: anonymous requests would be allowed everything the modes
		// before AlwaysAllow do not decide.
		s.log.Warn("anonymous-auth is not allowed with the AlwaysAllow authorizer: turning it off; use another authorization mode")
		anonymous = false
	}
	a := &authn.Authenticator{Anonymous: anonymous, APIAudiences: cfg.APIAudiences}
	clientCAs, err := s.clientCAPool()
	if err != nil {
		return err
	}
	a.ClientCAs = clientCAs
	if s.certs.clientCA != nil {
		a.DynamicClientCAs = s.certs.clientCA.Pool
	}
	if a.RequestHeader, err = s.requestHeader(); err != nil {
		return err
	}
	if len(a.APIAudiences) == 0 {
		a.APIAudiences = cfg.ServiceAccountIssuers
	}
	if cfg.TokenAuthFile != "" {
		t, err := authn.ReadTokenFile(cfg.TokenAuthFile)
		if err != nil {
			return fmt.Errorf("apiserver: --token-auth-file: %w", err)
		}
		a.Tokens = t
	}
	signingFile := cfg.ServiceAccountSigningKeyFile
	if signingFile == "" && s.bundle != nil {
		signingFile = s.bundle.ServiceAccountKey
	}
	var signer *authn.Signer
	if signingFile != "" {
		key, err := authn.ReadPrivateKey(signingFile)
		if err != nil {
			return fmt.Errorf("apiserver: --service-account-signing-key-file: %w", err)
		}
		if signer, err = authn.NewSigner(key); err != nil {
			return fmt.Errorf("apiserver: --service-account-signing-key-file: %w", err)
		}
	}
	var keys []*authn.PublicKey
	for _, f := range cfg.ServiceAccountKeyFiles {
		k, err := authn.ReadPublicKeys(f)
		if err != nil {
			return fmt.Errorf("apiserver: --service-account-key-file: %w", err)
		}
		keys = append(keys, k...)
	}
	if len(keys) == 0 && signer != nil {
		keys = []*authn.PublicKey{signer.Public()}
	}
	st := &authnState{authn: a}
	if len(keys) > 0 {
		a.ServiceAccounts = &authn.ServiceAccounts{Issuers: cfg.ServiceAccountIssuers, Keys: keys, Audiences: a.APIAudiences, Get: s.getObject,
			MarkLegacyTokenUsed: s.markLegacyTokenUsed, Log: s.log}
		var err error
		st.oidc, st.jwks, err = authn.DiscoveryHandlers(cfg.ServiceAccountIssuers[0], cfg.ServiceAccountJWKSURI, keys)
		if err != nil {
			return fmt.Errorf("apiserver: --service-account-jwks-uri: %w", err)
		}
	}
	if signer != nil {
		st.tokenRequests = &authn.TokenRequests{Signer: signer, Issuer: cfg.ServiceAccountIssuers[0], Audiences: a.APIAudiences,
			MaxExpiry: cfg.ServiceAccountMaxTokenExpiration, Get: s.getObject}
		s.registry.Resource(schema.GroupResource{Resource: "serviceaccounts"}).Subresources["token"] = st.tokenRequests
	}
	s.authnState = st
	return nil
}

// alwaysAllows reports whether AlwaysAllow is one of the authorization modes, wherever it
// stands in the list: kube-apiserver turns anonymous authentication off then.
func alwaysAllows(modes string) bool {
	parsed, err := authz.ParseModes(modes) // checked by Validate
	return err == nil && slices.Contains(parsed, "AlwaysAllow")
}

// getObject reads a core/v1 object through the registry, for the token authenticator.
func (s *Server) getObject(ctx context.Context, resource, ns, name string) (runtime.Object, error) {
	res := s.registry.Resource(schema.GroupResource{Resource: resource})
	if res == nil {
		return nil, fmt.Errorf("no resource %q", resource)
	}
	return res.Store.Get(ctx, ns, name, &metav1.GetOptions{})
}

// authnResources are the authentication.k8s.io/v1 reviews: served, not stored.
func (s *Server) authnResources() []endpoints.Resource {
	return []endpoints.Resource{
		{Names: authn.TokenReviewNames, Storage: &authn.TokenReviews{Authenticator: s.authnState.authn}},
		{Names: authn.SelfSubjectReviewNames, Storage: authn.SelfSubjectReviews{}},
	}
}

// installAuthn serves the ServiceAccount issuer discovery documents.
func (s *Server) installAuthn(mux *http.ServeMux) {
	if s.authnState.oidc != nil {
		mux.Handle("GET "+authn.OpenIDConfigPath, s.authnState.oidc)
		mux.Handle("GET "+authn.JWKSPath, s.authnState.jwks)
	}
}

// authenticate sets the request's user (request.WithUser). Bad credentials are 401 always;
// no credentials are 401 unless anonymous access is on; what an anonymous user may do is
// the authorizers' to decide (RBAC grants system:public-info-viewer to everyone), as upstream.
func (s *Server) authenticate(next, failed http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// warnings of the authenticators (a legacy token's), sent with the answer as
		// upstream's warning recorder does; written here, before the handler's goroutines
		var warned []string
		r = r.WithContext(request.WithWarnings(r.Context(), func(msg string) {
			if !slices.Contains(warned, msg) {
				warned = append(warned, msg)
			}
		}))
		u, err := s.authnState.authn.AuthenticateRequest(r)
		for _, msg := range warned {
			w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
		}
		if err != nil {
			s.log.Debug("authentication failed", "path", r.URL.Path, "err", err)
		}
		if err != nil || u == nil {
			failed.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	})
}

// unauthorized is the answer to a request without valid credentials.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	endpoints.WriteStatusError(w, r, apierrors.NewUnauthorized("Unauthorized"))
}

// AuthenticationConfigMap is where kube-apiserver publishes its client CA for delegated
// authentication (controller-manager, scheduler, extension apiservers).
const AuthenticationConfigMap = "extension-apiserver-authentication"

// publishClientCA writes the client CA, and the request-header settings when front proxies
// are trusted, into kube-system/extension-apiserver-authentication, as kube-apiserver's
// cluster-authentication-trust controller does (the lists as JSON arrays). Without a
// request-header CA, upstream writes no requestheader-* keys, and neither does this.
func (s *Server) publishClientCA(ctx context.Context) error {
	ca, err := s.clientCAPEM()
	if err != nil || ca == nil {
		return err
	}
	want := map[string]string{"client-ca-file": string(ca)}
	if rhCA, err := s.requestHeaderCA(); err != nil {
		return err
	} else if rhCA != nil {
		rh, err := s.requestHeader()
		if err != nil {
			return err
		}
		list := func(v []string) string {
			if v == nil {
				v = []string{}
			}
			b, _ := json.Marshal(v)
			return string(b)
		}
		want["requestheader-client-ca-file"] = string(rhCA)
		want["requestheader-allowed-names"] = list(rh.AllowedNames)
		want["requestheader-username-headers"] = list(rh.UsernameHeaders)
		want["requestheader-group-headers"] = list(rh.GroupHeaders)
		want["requestheader-extra-headers-prefix"] = list(rh.ExtraPrefixes)
	}
	cms := s.registry.Resource(schema.GroupResource{Resource: "configmaps"}).Store
	_, err = cms.Create(ctx, metav1.NamespaceSystem, "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: AuthenticationConfigMap, Namespace: metav1.NamespaceSystem},
		Data: want}, &metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, _, err = cms.Update(ctx, metav1.NamespaceSystem, AuthenticationConfigMap, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		cm, ok := cur.(*corev1.ConfigMap)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, AuthenticationConfigMap)
		}
		same := true
		for k, v := range want {
			same = same && cm.Data[k] == v
		}
		if same {
			return nil, errUnchanged
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		maps.Copy(cm.Data, want)
		return cm, nil
	}, &metav1.UpdateOptions{})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

var errUnchanged = errors.New("unchanged")

// keepClientCAPublished checks the published client CA every minute (as upstream's
// controller resyncs), so a deleted or edited ConfigMap comes back, until ctx ends.
func (s *Server) keepClientCAPublished(ctx context.Context) {
	defer s.background.Done()
	every := s.clientCAResync
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.publishClientCA(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("could not publish the client CA", "configmap", "kube-system/"+AuthenticationConfigMap, "err", err)
		}
	}
}

// ensure the types stay what registry.Creater expects.
var _ registry.Creater = (*authn.TokenRequests)(nil)

// clientCAPool is the CA pool of client certificates: --client-ca-file, or the generated CA.
func (s *Server) clientCAPool() (*x509.CertPool, error) {
	if s.certs.clientCA != nil {
		return s.certs.clientCA.Pool(), nil
	}
	if s.bundle != nil {
		return s.bundle.CAPool, nil
	}
	return nil, nil
}

// clientCAPEM is the client CA in PEM form: --client-ca-file, or the generated CA.
func (s *Server) clientCAPEM() ([]byte, error) {
	switch {
	case s.certs.clientCA != nil:
		return s.certs.clientCA.PEM(), nil
	case s.bundle != nil:
		return s.bundle.CAPEM, nil
	}
	return nil, nil
}

// generatedPKI reports whether every certificate is the generated one, as kubeadm lays them
// out: then the front-proxy CA and client certificate are the generated ones too.
func (s *Server) generatedPKI() bool {
	return s.bundle != nil && s.cfg.TLSCertFile == "" && s.cfg.ClientCAFile == ""
}

// requestHeaderCA is the front-proxy CA in PEM form, nil when request-header authentication
// is off.
func (s *Server) requestHeaderCA() ([]byte, error) {
	if s.certs.requestHeaderCA != nil {
		return s.certs.requestHeaderCA.PEM(), nil
	}
	if s.generatedPKI() {
		return s.bundle.FrontProxyCAPEM, nil
	}
	return nil, nil
}

// requestHeader is the request-header authenticator, nil when it is off. Headers default to
// kubeadm's; the allowed names to the generated client certificate's with generated PKI.
func (s *Server) requestHeader() (*authn.RequestHeader, error) {
	caPEM, err := s.requestHeaderCA()
	if err != nil || caPEM == nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("apiserver: --requestheader-client-ca-file: no PEM certificate in it")
	}
	or := func(v, def []string) []string {
		if len(v) > 0 {
			return v
		}
		return def
	}
	rh := &authn.RequestHeader{CAs: pool, AllowedNames: s.cfg.RequestHeaderAllowedNames,
		UsernameHeaders: or(s.cfg.RequestHeaderUsernameHeaders, authn.DefaultUsernameHeaders),
		GroupHeaders:    or(s.cfg.RequestHeaderGroupHeaders, authn.DefaultGroupHeaders),
		ExtraPrefixes:   or(s.cfg.RequestHeaderExtraHeadersPrefix, authn.DefaultExtraPrefixes)}
	if s.certs.requestHeaderCA != nil {
		rh.DynamicCAs = s.certs.requestHeaderCA.Pool
	}
	if len(rh.AllowedNames) == 0 && s.cfg.RequestHeaderClientCAFile == "" {
		rh.AllowedNames = []string{certs.FrontProxyClientName}
	}
	return rh, nil
}
