package ctl

import (
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Renewal is what Renew did with one leaf certificate file.
type Renewal struct {
	Path     string    `json:"path"`
	Subject  string    `json:"subject"`
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"notAfter,omitzero"` // the new certificate's, when renewed
	// Skipped says why the file was left as it was (no CA key here, a bundle).
	Skipped string `json:"skipped,omitempty"`
}

// signer is a CA whose key is on this host.
type signer struct {
	cert *x509.Certificate
	key  crypto.Signer
	path string
}

// Renew re-issues every leaf certificate found under dirs from its CA, when the CA's key is
// there too (ca.crt next to ca.key): the same subject, names, key usages and public key (the
// key file is untouched), a new serial number, valid from now for as long as the old one was
// (or validFor when positive). Each file is replaced atomically (a temporary file renamed
// over it, with the old file's mode and owner); the programs pick the new files up when they
// reload them.
func Renew(dirs []string, now time.Time, validFor time.Duration) ([]Renewal, error) {
	certs, err := ScanCerts(dirs)
	if err != nil {
		return nil, err
	}
	cas := signers(certs)
	var out []Renewal
	var errs []error
	for _, c := range certs {
		if c.IsCA || c.Index > 0 {
			continue
		}
		r := Renewal{Path: c.Path, Subject: c.Subject, Issuer: c.Issuer}
		ca := issuer(c.cert, cas)
		switch {
		case c.count > 1:
			r.Skipped = "a bundle of several certificates"
		case c.cert.CheckSignatureFrom(c.cert) == nil:
			r.Skipped = "self-signed"
		case ca == nil:
			r.Skipped = "the key of its CA (" + c.Issuer + ") is not on this host: renew it where the CA key is (deploy/ansible/rotate-certs.yml)"
		}
		if r.Skipped == "" {
			if r.NotAfter, err = reissue(c, ca, now, validFor); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.Path, err))
				continue
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// signers are the CA certificates whose key sits next to them (x.crt and x.key) and matches.
func signers(certs []CertFile) []signer {
	var out []signer
	for _, c := range certs {
		if !c.IsCA || c.count > 1 {
			continue
		}
		keyPath := strings.TrimSuffix(c.Path, filepath.Ext(c.Path)) + ".key"
		certPEM, err1 := os.ReadFile(c.Path)
		keyPEM, err2 := os.ReadFile(keyPath)
		if err1 != nil || err2 != nil {
			continue
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			continue
		}
		if key, ok := pair.PrivateKey.(crypto.Signer); ok {
			out = append(out, signer{cert: c.cert, key: key, path: c.Path})
		}
	}
	return out
}

// issuer is the CA among cas that signed leaf, or nil.
func issuer(leaf *x509.Certificate, cas []signer) *signer {
	for i := range cas {
		if leaf.CheckSignatureFrom(cas[i].cert) == nil {
			return &cas[i]
		}
	}
	return nil
}

// reissue signs a copy of c's certificate with ca and writes it over c's file.
func reissue(c CertFile, ca *signer, now time.Time, validFor time.Duration) (time.Time, error) {
	old := c.cert
	if validFor <= 0 {
		validFor = old.NotAfter.Sub(old.NotBefore)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return time.Time{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               old.Subject,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validFor),
		KeyUsage:              old.KeyUsage,
		ExtKeyUsage:           old.ExtKeyUsage,
		UnknownExtKeyUsage:    old.UnknownExtKeyUsage,
		BasicConstraintsValid: old.BasicConstraintsValid,
		DNSNames:              old.DNSNames,
		IPAddresses:           old.IPAddresses,
		URIs:                  old.URIs,
		EmailAddresses:        old.EmailAddresses,
		SubjectKeyId:          old.SubjectKeyId,
	}
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, old.PublicKey, ca.key)
	if err != nil {
		return time.Time{}, fmt.Errorf("sign with %s: %w", ca.path, err)
	}
	if err := replaceFile(c.Path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return time.Time{}, err
	}
	return tmpl.NotAfter, nil
}

// replaceFile writes data to a temporary file next to path, with path's mode and owner,
// syncs it and renames it over path: a reader sees the old file or the new one, never a part.
func replaceFile(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing left to remove
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if err := tmp.Chown(int(sys.Uid), int(sys.Gid)); err != nil && !errors.Is(err, os.ErrPermission) {
			tmp.Close()
			return err
		}
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
