// Package certreload holds certificates and CA bundles read from files and swaps them when
// the files change, so that a program picks up renewed certificates without a restart, as
// kube-apiserver's dynamic certificates do. A file that does not parse, or a key that does
// not match its certificate (a pair caught half-copied), is logged and the old one is kept.
package certreload

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
)

// Item is one reloadable thing: Reload reads its files again and reports whether what is
// in use changed.
type Item interface {
	Reload() (changed bool, err error)
	// Role names it in logs and metrics ("serving", "client-ca", "check-client", ...).
	Role() string
	// Loaded is the certificate in use (the first one of a bundle).
	Loaded() []*x509.Certificate
}

// KeyPair is a certificate and its key from two files.
type KeyPair struct {
	role, certFile, keyFile string
	log                     *slog.Logger
	mu                      sync.Mutex // one Reload at a time
	cur                     atomic.Pointer[keyPair]
}

type keyPair struct {
	tls     tls.Certificate
	certPEM []byte
	keyPEM  []byte
}

// NewKeyPair loads certFile and keyFile; an error means they do not make a pair now.
func NewKeyPair(role, certFile, keyFile string, log *slog.Logger) (*KeyPair, error) {
	k := &KeyPair{role: role, certFile: certFile, keyFile: keyFile, log: orDefault(log)}
	certPEM, keyPEM, c, err := k.read()
	if err != nil {
		return nil, err
	}
	k.cur.Store(&keyPair{tls: c, certPEM: certPEM, keyPEM: keyPEM})
	return k, nil
}

func (k *KeyPair) read() (certPEM, keyPEM []byte, c tls.Certificate, err error) {
	if certPEM, err = os.ReadFile(k.certFile); err != nil {
		return nil, nil, c, fmt.Errorf("certreload: %s certificate: %w", k.role, err)
	}
	if keyPEM, err = os.ReadFile(k.keyFile); err != nil {
		return nil, nil, c, fmt.Errorf("certreload: %s key: %w", k.role, err)
	}
	if c, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, nil, c, fmt.Errorf("certreload: %s pair %s, %s: %w", k.role, k.certFile, k.keyFile, err)
	}
	return certPEM, keyPEM, c, nil
}

// Role implements Item.
func (k *KeyPair) Role() string { return k.role }

// Reload implements Item: it swaps the pair in use for the files' when they changed and
// make a pair; otherwise the old pair stays, and the error says why.
func (k *KeyPair) Reload() (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.cur.Load()
	certPEM, keyPEM, c, err := k.read()
	if err != nil {
		return false, err
	}
	if bytes.Equal(certPEM, old.certPEM) && bytes.Equal(keyPEM, old.keyPEM) {
		return false, nil
	}
	k.cur.Store(&keyPair{tls: c, certPEM: certPEM, keyPEM: keyPEM})
	leaf := c.Leaf
	k.log.Info("certificate reloaded", "cert", k.role, "file", k.certFile, "serial", serialHex(leaf),
		"subject", leaf.Subject.String(), "notAfter", leaf.NotAfter)
	return true, nil
}

// Certificate is the pair in use.
func (k *KeyPair) Certificate() *tls.Certificate { return &k.cur.Load().tls }

// Loaded implements Item.
func (k *KeyPair) Loaded() []*x509.Certificate { return []*x509.Certificate{k.cur.Load().tls.Leaf} }

// GetCertificate is tls.Config.GetCertificate for a server that serves the pair in use.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Certificate(), nil
}

// GetClientCertificate is tls.Config.GetClientCertificate for a client that presents it.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Certificate(), nil
}

// CABundle is a PEM file of CA certificates, as a pool.
type CABundle struct {
	role, file string
	log        *slog.Logger
	mu         sync.Mutex
	cur        atomic.Pointer[caBundle]
}

type caBundle struct {
	pem   []byte
	pool  *x509.CertPool
	certs []*x509.Certificate
}

// NewCABundle loads file; an error means it holds no parsable certificate now.
func NewCABundle(role, file string, log *slog.Logger) (*CABundle, error) {
	b := &CABundle{role: role, file: file, log: orDefault(log)}
	cur, err := b.read()
	if err != nil {
		return nil, err
	}
	b.cur.Store(cur)
	return b, nil
}

func (b *CABundle) read() (*caBundle, error) {
	data, err := os.ReadFile(b.file)
	if err != nil {
		return nil, fmt.Errorf("certreload: %s: %w", b.role, err)
	}
	certs, err := ParsePEM(data)
	if err != nil {
		return nil, fmt.Errorf("certreload: %s %s: %w", b.role, b.file, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return &caBundle{pem: data, pool: pool, certs: certs}, nil
}

// ParsePEM returns the certificates of a PEM bundle: an error when one does not parse, a
// block is cut short, or there is none.
func ParsePEM(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		return nil, errors.New("a PEM block is cut short")
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return certs, nil
}

// Role implements Item.
func (b *CABundle) Role() string { return b.role }

// Reload implements Item.
func (b *CABundle) Reload() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	next, err := b.read()
	if err != nil {
		return false, err
	}
	if bytes.Equal(next.pem, b.cur.Load().pem) {
		return false, nil
	}
	b.cur.Store(next)
	serials := make([]string, len(next.certs))
	for i, c := range next.certs {
		serials[i] = serialHex(c)
	}
	b.log.Info("CA bundle reloaded", "cert", b.role, "file", b.file, "serials", serials)
	return true, nil
}

// Pool is the bundle in use.
func (b *CABundle) Pool() *x509.CertPool { return b.cur.Load().pool }

// PEM is the bundle in use as read.
func (b *CABundle) PEM() []byte { return b.cur.Load().pem }

// Loaded implements Item.
func (b *CABundle) Loaded() []*x509.Certificate { return b.cur.Load().certs }

func serialHex(c *x509.Certificate) string {
	if c == nil || c.SerialNumber == nil {
		return ""
	}
	return fmt.Sprintf("%x", c.SerialNumber)
}

// Serial is c's serial number in hex, as openssl prints it (lowercase, no colons).
func Serial(c *x509.Certificate) string { return serialHex(c) }

func orDefault(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}
