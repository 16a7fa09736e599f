package authn

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
)

// Paths of the ServiceAccount issuer discovery documents.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// JWK is one key of a JSON Web Key Set, as go-jose writes it for upstream.
type JWK struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// OpenIDConfig is the discovery document upstream serves for its ServiceAccount issuer.
type OpenIDConfig struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// KeySet is the JWKS of keys.
func KeySet(keys []*PublicKey) JWKS {
	set := JWKS{Keys: []JWK{}}
	b64 := base64.RawURLEncoding.EncodeToString
	for _, k := range keys {
		j := JWK{Use: "sig", Kid: k.Kid, Alg: k.Alg}
		switch p := k.Key.(type) {
		case *rsa.PublicKey:
			j.Kty, j.N, j.E = "RSA", b64(p.N.Bytes()), b64(big.NewInt(int64(p.E)).Bytes())
		case *ecdsa.PublicKey:
			pt, err := p.Bytes() // 0x04 || X || Y
			if err != nil {
				continue
			}
			n := (len(pt) - 1) / 2
			j.Kty, j.Crv, j.X, j.Y = "EC", p.Curve.Params().Name, b64(pt[1:1+n]), b64(pt[1+n:])
		}
		set.Keys = append(set.Keys, j)
	}
	return set
}

// DiscoveryHandlers returns the handlers of OpenIDConfigPath and JWKSPath for issuer and
// keys. jwksURI defaults to the issuer's scheme and host with JWKSPath; an issuer that is
// not an https URL needs an explicit jwksURI (as upstream, discovery is off otherwise:
// nil handlers).
func DiscoveryHandlers(issuer, jwksURI string, keys []*PublicKey) (config, jwks http.Handler, err error) {
	if jwksURI == "" {
		u, perr := url.Parse(issuer)
		if perr != nil || u.Scheme != "https" || u.Host == "" {
			return nil, nil, nil
		}
		jwksURI = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: JWKSPath}).String()
	} else if u, perr := url.Parse(jwksURI); perr != nil || u.Scheme != "https" || u.Host == "" {
		return nil, nil, fmt.Errorf("%q is not an https URL", jwksURI)
	}
	var algs []string
	for _, k := range keys {
		if !slices.Contains(algs, k.Alg) {
			algs = append(algs, k.Alg)
		}
	}
	slices.Sort(algs)
	cfg, err := json.Marshal(OpenIDConfig{Issuer: issuer, JWKSURI: jwksURI, ResponseTypes: []string{"id_token"}, SubjectTypes: []string{"public"}, SigningAlgs: algs})
	if err != nil {
		return nil, nil, err
	}
	set, err := json.Marshal(KeySet(keys))
	if err != nil {
		return nil, nil, err
	}
	serve := func(body []byte, ctype string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		})
	}
	return serve(cfg, "application/json"), serve(set, "application/jwk-set+json"), nil
}
