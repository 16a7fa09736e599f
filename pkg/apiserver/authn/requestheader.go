package authn

import (
	"crypto/x509"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/request"
)

// RequestHeader authenticates requests a front proxy (an aggregating apiserver) makes on
// behalf of a caller, as upstream's request-header authenticator: the connection's client
// certificate must chain to CAs and, when AllowedNames is set, carry one of those common
// names; the caller is then read from the headers.
type RequestHeader struct {
	CAs             *x509.CertPool
	DynamicCAs      func() *x509.CertPool // asked at each request instead of CAs when set (a reloaded CA file)
	AllowedNames    []string
	UsernameHeaders []string // the first non-empty one wins
	UIDHeaders      []string
	GroupHeaders    []string // every value of every one
	ExtraPrefixes   []string // Prefix<key>: values; the key is unescaped and lower-cased
}

// Default headers, kubeadm's (upstream's flags have no default).
var (
	DefaultUsernameHeaders = []string{"X-Remote-User"}
	DefaultGroupHeaders    = []string{"X-Remote-Group"}
	DefaultExtraPrefixes   = []string{"X-Remote-Extra-"}
)

// proxied reports whether the peer certificates are a front proxy's.
func (h *RequestHeader) proxied(certs []*x509.Certificate) bool {
	if h == nil || len(certs) == 0 {
		return false
	}
	roots := h.CAs
	if h.DynamicCAs != nil {
		roots = h.DynamicCAs()
	}
	if roots == nil || !verifies(certs, roots) {
		return false
	}
	return len(h.AllowedNames) == 0 || slices.Contains(h.AllowedNames, certs[0].Subject.CommonName)
}

// user reads the caller from r's headers and removes them; nil when no username is set.
func (h *RequestHeader) user(r *http.Request) *request.User {
	var u request.User
	for _, name := range h.UsernameHeaders {
		if v := r.Header.Get(name); v != "" {
			u.Name = v
			break
		}
	}
	if u.Name == "" {
		return nil
	}
	for _, name := range h.UIDHeaders {
		if v := r.Header.Get(name); v != "" {
			u.UID = v
			break
		}
	}
	for _, name := range h.GroupHeaders {
		u.Groups = append(u.Groups, r.Header.Values(name)...)
	}
	for name, values := range r.Header {
		for _, prefix := range h.ExtraPrefixes {
			if len(name) <= len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
				continue
			}
			key := name[len(prefix):]
			if k, err := url.PathUnescape(key); err == nil {
				key = k
			}
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			key = strings.ToLower(key)
			u.Extra[key] = append(u.Extra[key], values...)
		}
	}
	h.clear(r)
	return &u
}

// clear removes the identity headers, as upstream does once they are read.
func (h *RequestHeader) clear(r *http.Request) {
	for _, list := range [][]string{h.UsernameHeaders, h.UIDHeaders, h.GroupHeaders} {
		for _, name := range list {
			r.Header.Del(name)
		}
	}
	for name := range r.Header {
		for _, prefix := range h.ExtraPrefixes {
			if len(name) > len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
				r.Header.Del(name)
			}
		}
	}
}

// verifies reports whether certs[0] chains to roots (through certs[1:]) for client auth.
// A verdict is kept for a while (verifycache.go).
func verifies(certs []*x509.Certificate, roots *x509.CertPool) bool {
	return verifications.verify(certs, roots, func() bool {
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	})
}
