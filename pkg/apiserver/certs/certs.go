// Package certs creates and reuses the small PKI an apiserver needs to serve
// TLS on its own: a self-signed CA, a serving certificate for the hosts the
// server answers on, and an admin client certificate (O=system:masters) for
// the kubeconfig that kubectl and client-go use.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names inside the bundle directory.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "serving.crt"
	ServingKeyFile  = "serving.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
	// The front-proxy CA and the client certificate the apiserver presents when it proxies
	// a request with the caller in X-Remote-* headers (kubeadm's names).
	FrontProxyCACertFile     = "front-proxy-ca.crt"
	FrontProxyCAKeyFile      = "front-proxy-ca.key"
	FrontProxyClientCertFile = "front-proxy-client.crt"
	FrontProxyClientKeyFile  = "front-proxy-client.key"
	// FrontProxyClientName is the front-proxy client certificate's CN, the one name
	// --requestheader-allowed-names allows by default.
	FrontProxyClientName = "front-proxy-client"
	// ServiceAccountKeyFile signs ServiceAccount tokens (kubeadm's sa.key).
	ServiceAccountKeyFile = "sa.key"
)

// Default lifetimes.
const (
	DefaultValidFor = 365 * 24 * time.Hour
	caValidFor      = 10 * 365 * 24 * time.Hour
	// renewBefore: a leaf that expires sooner than this is regenerated.
	renewBefore = 24 * time.Hour
)

// Subject of the admin client certificate. The authenticator maps CN to the
// user name and O to groups, as kube-apiserver does.
const (
	AdminUser  = "admin"
	AdminGroup = "system:masters"
)

// Options says what the serving certificate must cover.
type Options struct {
	// Hosts are the IP addresses and DNS names put into the serving
	// certificate's subject alternative names. 127.0.0.1, ::1 and localhost
	// are always included.
	Hosts []string
	// ValidFor is the lifetime of newly issued leaf certificates (serving and
	// admin); zero means DefaultValidFor. The CA lives ten years.
	ValidFor time.Duration
}

// Bundle is the PKI on disk plus the parsed pieces a server and a client need.
type Bundle struct {
	// Dir is the directory that holds the files.
	Dir string
	// File paths (PEM).
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	// ServiceAccountKey is the ECDSA P-256 key that signs ServiceAccount tokens.
	ServiceAccountKey string
	// The front-proxy CA (request-header authentication) and its client certificate.
	FrontProxyCACert, FrontProxyCAKey         string
	FrontProxyClientCert, FrontProxyClientKey string
	// FrontProxyCAPEM is the front-proxy CA in PEM form.
	FrontProxyCAPEM []byte

	// CAPEM is the CA certificate in PEM form (for kubeconfigs).
	CAPEM []byte
	// CAPool holds only the CA; use it as ClientCAs on the server and RootCAs
	// on clients.
	CAPool *x509.CertPool
	// ServingTLS is the serving certificate and key.
	ServingTLS tls.Certificate
	// AdminTLS is the admin client certificate and key.
	AdminTLS tls.Certificate
	// AdminCertPEM and AdminKeyPEM are the admin credentials in PEM form.
	AdminCertPEM, AdminKeyPEM []byte

	// Generated lists the files written by this Ensure call (base names),
	// empty when everything was reused.
	Generated []string
}

// ServerTLSConfig returns a TLS config for an HTTPS server: it presents the
// serving certificate and verifies client certificates against the CA when
// a client sends one (requests without one go on to other authenticators).
func (b *Bundle) ServerTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{b.ServingTLS},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    b.CAPool,
		NextProtos:   []string{"h2", "http/1.1"},
	}
}

// ClientTLSConfig returns a TLS config for an admin client: it trusts only
// the CA and presents the admin certificate.
func (b *Bundle) ClientTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		RootCAs:      b.CAPool,
		Certificates: []tls.Certificate{b.AdminTLS},
	}
}

// Ensure makes dir hold a CA, a serving certificate for o.Hosts and an admin
// client certificate, creating what is missing and reusing what is valid.
// The CA is never regenerated once it exists: a broken CA is an error the
// operator must resolve. A leaf is reissued when it is missing, unreadable,
// not signed by the CA, about to expire, or (serving) its SANs differ from
// the requested hosts. Keys are ECDSA P-256, written 0600; dir is 0700.
func Ensure(dir string, o Options) (*Bundle, error) {
	if o.ValidFor <= 0 {
		o.ValidFor = DefaultValidFor
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certs: create %s: %w", dir, err)
	}
	b := &Bundle{
		Dir:         dir,
		CACert:      filepath.Join(dir, CACertFile),
		CAKey:       filepath.Join(dir, CAKeyFile),
		ServingCert: filepath.Join(dir, ServingCertFile),
		ServingKey:  filepath.Join(dir, ServingKeyFile),
		AdminCert:   filepath.Join(dir, AdminCertFile),
		AdminKey:    filepath.Join(dir, AdminKeyFile),

		ServiceAccountKey: filepath.Join(dir, ServiceAccountKeyFile),

		FrontProxyCACert:     filepath.Join(dir, FrontProxyCACertFile),
		FrontProxyCAKey:      filepath.Join(dir, FrontProxyCAKeyFile),
		FrontProxyClientCert: filepath.Join(dir, FrontProxyClientCertFile),
		FrontProxyClientKey:  filepath.Join(dir, FrontProxyClientKeyFile),
	}
	now := time.Now()

	ca, caKey, err := b.ensureCA(now)
	if err != nil {
		return nil, err
	}
	b.CAPool = x509.NewCertPool()
	b.CAPool.AddCert(ca)

	ips, dns := splitHosts(o.Hosts)
	servingOK := func(c *x509.Certificate) bool {
		if !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
			return false
		}
		return sameIPs(c.IPAddresses, ips) && sameStrings(c.DNSNames, dns)
	}
	servingTmpl := func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: "hacp-apiserver"},
			IPAddresses: ips,
			DNSNames:    dns,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
	}
	b.ServingTLS, _, _, err = b.ensureLeaf(b.ServingCert, b.ServingKey, ca, caKey, now, o.ValidFor, servingTmpl, servingOK)
	if err != nil {
		return nil, err
	}

	adminOK := func(c *x509.Certificate) bool {
		return c.Subject.CommonName == AdminUser &&
			slices.Equal(c.Subject.Organization, []string{AdminGroup}) &&
			slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	adminTmpl := func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
	}
	b.AdminTLS, b.AdminCertPEM, b.AdminKeyPEM, err = b.ensureLeaf(b.AdminCert, b.AdminKey, ca, caKey, now, o.ValidFor, adminTmpl, adminOK)
	if err != nil {
		return nil, err
	}
	if err := b.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	fpCA, fpKey, fpPEM, err := b.ensureCAAt(b.FrontProxyCACert, b.FrontProxyCAKey, "hacp-front-proxy-ca", now)
	if err != nil {
		return nil, err
	}
	b.FrontProxyCAPEM = fpPEM
	fpOK := func(c *x509.Certificate) bool {
		return c.Subject.CommonName == FrontProxyClientName && slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	fpTmpl := func() *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: FrontProxyClientName}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	if _, _, _, err := b.ensureLeaf(b.FrontProxyClientCert, b.FrontProxyClientKey, fpCA, fpKey, now, o.ValidFor, fpTmpl, fpOK); err != nil {
		return nil, err
	}
	return b, nil
}

// ensureServiceAccountKey creates the ServiceAccount signing key when it does not exist.
// Like the CA it is never replaced: a new key would end every token issued so far.
func (b *Bundle) ensureServiceAccountKey() error {
	data, err := os.ReadFile(b.ServiceAccountKey)
	if err == nil {
		if blk, _ := pem.Decode(data); blk == nil || blk.Type != "EC PRIVATE KEY" {
			return fmt.Errorf("certs: %s is not an EC PRIVATE KEY in PEM form; remove it to generate a new one (tokens signed with it stop working)", b.ServiceAccountKey)
		} else if _, err := x509.ParseECPrivateKey(blk.Bytes); err != nil {
			return fmt.Errorf("certs: %s: %w", b.ServiceAccountKey, err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("certs: read %s: %w", b.ServiceAccountKey, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFile(b.ServiceAccountKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	b.Generated = append(b.Generated, ServiceAccountKeyFile)
	return nil
}

// ensureCA loads the CA or creates it when neither file exists.
func (b *Bundle) ensureCA(now time.Time) (*x509.Certificate, crypto.Signer, error) {
	ca, signer, caPEM, err := b.ensureCAAt(b.CACert, b.CAKey, "hacp-ca", now)
	if err != nil {
		return nil, nil, err
	}
	b.CAPEM = caPEM
	return ca, signer, nil
}

// ensureCAAt is ensureCA for the CA at certPath/keyPath, named name when it is created; it
// returns the CA's certificate in PEM form too.
func (b *Bundle) ensureCAAt(certPath, keyPath, name string, now time.Time) (*x509.Certificate, crypto.Signer, []byte, error) {
	_, certErr := os.Stat(certPath)
	_, keyErr := os.Stat(keyPath)
	if errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("certs: generate CA key: %w", err)
		}
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: name},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(caValidFor),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		certPEM, keyPEM, err := sign(tmpl, tmpl, key, key)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("certs: self-sign CA: %w", err)
		}
		// Key first: a crash between the two writes leaves a key without a
		// certificate, which the next run reports instead of silently
		// replacing a CA that clients may already trust.
		if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, nil, nil, err
		}
		if err := writeFile(certPath, certPEM, 0o644); err != nil {
			return nil, nil, nil, err
		}
		b.Generated = append(b.Generated, b.rel(certPath), b.rel(keyPath))
	}
	pair, certs, err := loadPair(certPath, keyPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("certs: CA in %s is unusable (remove %s and %s to start a new PKI): %w",
			b.Dir, b.rel(certPath), b.rel(keyPath), err)
	}
	ca := certs[0]
	if !ca.IsCA {
		return nil, nil, nil, fmt.Errorf("certs: %s is not a CA certificate", certPath)
	}
	if now.After(ca.NotAfter) {
		return nil, nil, nil, fmt.Errorf("certs: CA %s expired at %s (remove %s and %s to start a new PKI)",
			certPath, ca.NotAfter.Format(time.RFC3339), b.rel(certPath), b.rel(keyPath))
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, nil, fmt.Errorf("certs: CA key %s cannot sign", keyPath)
	}
	return ca, signer, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), nil
}

// ensureLeaf reuses the leaf at certPath/keyPath when it loads, chains to ca,
// is not about to expire and satisfies ok; otherwise it issues a new one from
// tmpl. It returns the pair and its PEM bytes.
func (b *Bundle) ensureLeaf(certPath, keyPath string, ca *x509.Certificate, caKey crypto.Signer, now time.Time,
	validFor time.Duration, tmpl func() *x509.Certificate, ok func(*x509.Certificate) bool) (tls.Certificate, []byte, []byte, error) {
	if pair, certs, err := loadPair(certPath, keyPath); err == nil {
		leaf := certs[0]
		if leaf.CheckSignatureFrom(ca) == nil && now.Add(renewBefore).Before(leaf.NotAfter) && ok(leaf) {
			certPEM, _ := os.ReadFile(certPath)
			keyPEM, _ := os.ReadFile(keyPath)
			return pair, certPEM, keyPEM, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("certs: generate key: %w", err)
	}
	t := tmpl()
	t.NotBefore = now.Add(-time.Hour)
	t.NotAfter = now.Add(validFor)
	t.KeyUsage = x509.KeyUsageDigitalSignature
	t.BasicConstraintsValid = true
	certPEM, keyPEM, err := sign(t, ca, key, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("certs: sign %s: %w", filepath.Base(certPath), err)
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	if err := writeFile(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	b.Generated = append(b.Generated, b.rel(certPath), b.rel(keyPath))
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("certs: load new %s: %w", filepath.Base(certPath), err)
	}
	return pair, certPEM, keyPEM, nil
}

// rel is path relative to the bundle directory, as Generated lists it.
func (b *Bundle) rel(path string) string {
	if r, err := filepath.Rel(b.Dir, path); err == nil {
		return r
	}
	return filepath.Base(path)
}

// sign issues tmpl signed by parent's key and returns certificate and key PEM.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) ([]byte, []byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// loadPair reads a PEM certificate chain and key and parses the chain.
func loadPair(certPath, keyPath string) (tls.Certificate, []*x509.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certs := make([]*x509.Certificate, 0, len(pair.Certificate))
	for _, der := range pair.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("parse %s: %w", certPath, err)
		}
		certs = append(certs, c)
	}
	pair.Leaf = certs[0]
	return pair, certs, nil
}

// writeFile writes data atomically (temp file + rename) with mode perm.
func writeFile(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}

// splitHosts returns the SANs for hosts plus the loopback defaults, sorted
// and without duplicates.
func splitHosts(hosts []string) ([]net.IP, []string) {
	var ips []net.IP
	var dns []string
	for _, h := range append([]string{"127.0.0.1", "::1", "localhost"}, hosts...) {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	slices.SortFunc(ips, func(a, b net.IP) int { return bytes.Compare(a.To16(), b.To16()) })
	slices.Sort(dns)
	return ips, dns
}

func sameIPs(have, want []net.IP) bool {
	if len(have) != len(want) {
		return false
	}
	for _, ip := range want {
		if !slices.ContainsFunc(have, ip.Equal) {
			return false
		}
	}
	return true
}

func sameStrings(have, want []string) bool {
	have = slices.Clone(have)
	slices.Sort(have)
	return slices.Equal(have, want)
}

// IssueClient signs a client certificate for user (CN) in groups (O) with the bundle's CA
// and returns it and its key in PEM form, for other users than admin (tests, operators
// handing out credentials RBAC then limits). Nothing is written to disk.
func (b *Bundle) IssueClient(user string, groups []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	pair, certs, err := loadPair(b.CACert, b.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: load CA: %w", err)
	}
	caKey, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("certs: CA key %s cannot sign", b.CAKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generate key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: user, Organization: groups},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	return sign(tmpl, certs[0], key, caKey)
}
