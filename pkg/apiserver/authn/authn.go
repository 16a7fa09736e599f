// Package authn tells who sends a request, as kube-apiserver's authenticators do, in their
// union order: client certificates, static bearer tokens (--token-auth-file), ServiceAccount
// tokens (bound and legacy), then anonymous. It also serves what belongs to authentication:
// TokenRequest, TokenReview, SelfSubjectReview and the OIDC discovery documents.
package authn

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
)

// ErrUnauthorized: the request carried credentials and none of them is valid.
var ErrUnauthorized = errors.New("Unauthorized")

// Authenticator is the union of the configured authenticators.
type Authenticator struct {
	// Tokens are the static tokens of --token-auth-file.
	Tokens map[string]*request.User
	// ServiceAccounts verifies ServiceAccount JWTs (nil: none accepted).
	ServiceAccounts *ServiceAccounts
	// Anonymous lets requests without credentials through as system:anonymous.
	Anonymous bool
	// APIAudiences are what tokens must be meant for (--api-audiences).
	APIAudiences []string
	// ClientCAs verify client certificates (x509 users); nil: no client certificate is a
	// user (--client-ca-file unset, as upstream's x509 authenticator is then off).
	ClientCAs *x509.CertPool
	// DynamicClientCAs, when set, is asked for the client CAs at each request instead of
	// ClientCAs (a --client-ca-file reloaded when it changes).
	DynamicClientCAs func() *x509.CertPool
	// RequestHeader authenticates front proxies (nil: off). Its CA verifies only front
	// proxies, never users: the TLS handshake accepts both, this tells them apart.
	RequestHeader *RequestHeader
}

// AnonymousUser is the user of a request without credentials.
func AnonymousUser() *request.User {
	return &request.User{Name: request.Anonymous, Groups: []string{request.AllUnauthenticated}}
}

func (a *Authenticator) clientCAs() *x509.CertPool {
	if a.DynamicClientCAs != nil {
		return a.DynamicClientCAs()
	}
	return a.ClientCAs
}

// AuthenticateRequest returns the caller of r, as upstream's union of authenticators: the
// request-header authenticator, client certificates, bearer tokens, the first that
// recognises the request wins. A request none recognises is anonymous (nil user and nil
// error when anonymous access is off), unless one of them refused its credentials: then it
// is ErrUnauthorized, whatever the anonymous setting.
func (a *Authenticator) AuthenticateRequest(r *http.Request) (*request.User, error) {
	refused := false
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		certs := r.TLS.PeerCertificates
		if a.RequestHeader != nil {
			// A front proxy's certificate without a username header is nobody yet; any
			// other certificate is refused here (and may still be a client's).
			if !a.RequestHeader.proxied(certs) {
				refused = true
			} else if u := a.RequestHeader.user(r); u != nil {
				return withAuthenticated(u), nil
			}
		}
		if roots := a.clientCAs(); roots != nil {
			// Only the client CA makes users: a front proxy's certificate, which the
			// handshake accepted through the request-header CA, is refused here.
			if verifies(certs, roots) {
				cert := certs[0]
				return withAuthenticated(&request.User{Name: cert.Subject.CommonName, Groups: slices.Clone(cert.Subject.Organization)}), nil
			}
			refused = true
		}
	}
	if token, ok := bearerToken(r); ok {
		u, _, err := a.AuthenticateToken(r.Context(), token, nil)
		if err != nil {
			return nil, err
		}
		// The token must not reach anything after authentication, as upstream removes it.
		r.Header.Del("Authorization")
		return u, nil
	}
	if refused {
		return nil, ErrUnauthorized
	}
	if a.Anonymous {
		return AnonymousUser(), nil
	}
	return nil, nil
}

// AuthenticateToken checks a bearer token against the static tokens and then the
// ServiceAccount verifier, for audiences (the API audiences when empty). It returns the
// user and the audiences the token is good for; a token nobody accepts is an error.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string, audiences []string) (*request.User, []string, error) {
	if len(audiences) == 0 {
		audiences = a.APIAudiences
	}
	if u := a.staticToken(token); u != nil {
		// Static tokens have no audience of their own: good for the API's audiences.
		var auds []string
		for _, x := range audiences {
			if slices.Contains(a.APIAudiences, x) {
				auds = append(auds, x)
			}
		}
		if len(auds) > 0 || len(a.APIAudiences) == 0 {
			return withAuthenticated(u), auds, nil
		}
		return nil, nil, ErrUnauthorized
	}
	if a.ServiceAccounts != nil {
		u, auds, err := a.ServiceAccounts.AuthenticateToken(ctx, token, audiences)
		if err == nil {
			return withAuthenticated(u), auds, nil
		}
		if !errors.Is(err, errNotMine) {
			return nil, nil, err
		}
	}
	return nil, nil, ErrUnauthorized
}

func (a *Authenticator) staticToken(token string) *request.User {
	u := a.Tokens[token]
	if u == nil {
		return nil
	}
	return &request.User{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
}

// withAuthenticated adds system:authenticated to u's groups, as upstream's union does.
func withAuthenticated(u *request.User) *request.User {
	if !slices.Contains(u.Groups, request.AllAuthenticated) {
		u.Groups = append(u.Groups, request.AllAuthenticated)
	}
	return u
}

// bearerToken is the token of an "Authorization: Bearer" header; an empty token counts as
// no credentials, as upstream.
func bearerToken(r *http.Request) (string, bool) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
