package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"os"
	"strings"
)

// Errors of JWT parsing and verification.
var (
	ErrMalformed    = errors.New("malformed token")
	ErrBadSignature = errors.New("invalid signature")
	ErrAlgorithm    = errors.New("unsupported signing algorithm")
)

// maxTokenBytes bounds what is parsed of a bearer token.
const maxTokenBytes = 64 << 10

// header is a JWS protected header.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ,omitempty"`
}

// PublicKey is a verification key with upstream's key id.
type PublicKey struct {
	Key crypto.PublicKey // *rsa.PublicKey or *ecdsa.PublicKey
	Alg string           // RS256, ES256, ES384, ES512
	Kid string
}

// KeyID is kube-apiserver's kid: base64url(SHA-256(DER of the PKIX public key)).
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func algFor(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
	}
	return "", fmt.Errorf("%w: key type %T", ErrAlgorithm, pub)
}

// NewPublicKey wraps pub with its algorithm and key id.
func NewPublicKey(pub crypto.PublicKey) (*PublicKey, error) {
	alg, err := algFor(pub)
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(pub)
	if err != nil {
		return nil, err
	}
	return &PublicKey{Key: pub, Alg: alg, Kid: kid}, nil
}

// Signer signs JWTs with one private key.
type Signer struct {
	key crypto.Signer
	pub *PublicKey
}

// NewSigner returns a signer for an RSA or ECDSA private key.
func NewSigner(key crypto.Signer) (*Signer, error) {
	pub, err := NewPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	return &Signer{key: key, pub: pub}, nil
}

// Public is the signer's verification key.
func (s *Signer) Public() *PublicKey { return s.pub }

// Sign returns the compact JWS of claims (JSON-encoded).
func (s *Signer) Sign(claims any) (string, error) {
	hb, _ := json.Marshal(header{Alg: s.pub.Alg, Kid: s.pub.Kid})
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	h, hf := hashFor(s.pub.Alg)
	h.Write([]byte(input))
	digest := h.Sum(nil)
	var sig []byte
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, hf, digest)
	case *ecdsa.PrivateKey:
		var r, ss *big.Int
		r, ss, err = ecdsa.Sign(rand.Reader, k, digest)
		if err == nil {
			n := (k.Curve.Params().BitSize + 7) / 8
			sig = make([]byte, 2*n)
			r.FillBytes(sig[:n])
			ss.FillBytes(sig[n:])
		}
	default:
		err = fmt.Errorf("%w: key type %T", ErrAlgorithm, s.key)
	}
	if err != nil {
		return "", err
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func hashFor(alg string) (hash.Hash, crypto.Hash) {
	switch alg {
	case "ES384":
		return sha512.New384(), crypto.SHA384
	case "ES512":
		return sha512.New(), crypto.SHA512
	}
	return sha256.New(), crypto.SHA256
}

// jws is a parsed, not yet verified compact JWS.
type jws struct {
	header  header
	payload []byte
	input   string // header.payload, what the signature covers
	sig     []byte
}

// parseJWS splits and decodes a compact JWS without verifying it.
func parseJWS(token string) (*jws, error) {
	if len(token) > maxTokenBytes {
		return nil, ErrMalformed
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, ErrMalformed
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, ErrMalformed
	}
	j := &jws{payload: pb, sig: sig, input: parts[0] + "." + parts[1]}
	if err := json.Unmarshal(hb, &j.header); err != nil {
		return nil, ErrMalformed
	}
	switch j.header.Alg {
	case "RS256", "ES256", "ES384", "ES512":
	default:
		return nil, ErrAlgorithm
	}
	return j, nil
}

// verify checks the signature against any of keys (all of them: rotation lists the old
// and the new key; a kid is a hint, not a filter, as upstream's verifier).
func (j *jws) verify(keys []*PublicKey) error {
	h, hf := hashFor(j.header.Alg)
	h.Write([]byte(j.input))
	digest := h.Sum(nil)
	for _, k := range keys {
		if k.Alg != j.header.Alg {
			continue
		}
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			if rsa.VerifyPKCS1v15(pub, hf, digest, j.sig) == nil {
				return nil
			}
		case *ecdsa.PublicKey:
			n := (pub.Curve.Params().BitSize + 7) / 8
			if len(j.sig) != 2*n {
				continue
			}
			r, s := new(big.Int).SetBytes(j.sig[:n]), new(big.Int).SetBytes(j.sig[n:])
			if ecdsa.Verify(pub, digest, r, s) {
				return nil
			}
		}
	}
	return ErrBadSignature
}

// ReadPrivateKey reads a PEM RSA or ECDSA private key (PKCS#1, SEC 1 or PKCS#8).
func ReadPrivateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%s: no RSA or ECDSA private key in PEM form", path)
		}
		if b.Type != "RSA PRIVATE KEY" && b.Type != "EC PRIVATE KEY" && b.Type != "PRIVATE KEY" {
			continue
		}
		k, err := parsePrivateBlock(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
}

// ReadPublicKeys reads every RSA or ECDSA public key in a PEM file: public keys,
// certificates and private keys (their public half), as --service-account-key-file accepts.
func ReadPublicKeys(path string) ([]*PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*PublicKey
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var pub any
		switch b.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(b.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(b.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				pub = c.PublicKey
			}
		case "RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY":
			var k crypto.Signer
			if k, err = parsePrivateBlock(b); err == nil {
				pub = k.Public()
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		pk, err := NewPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, pk)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no RSA or ECDSA public key in PEM form", path)
	}
	return out, nil
}

func parsePrivateBlock(b *pem.Block) (crypto.Signer, error) {
	var k any
	var err error
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, err
	}
	switch s := k.(type) {
	case *rsa.PrivateKey:
		return s, nil
	case *ecdsa.PrivateKey:
		return s, nil
	}
	return nil, fmt.Errorf("%T is not an RSA or ECDSA key", k)
}
