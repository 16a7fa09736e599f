package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/hacp/hacp/pkg/apiserver/certs"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/config"
)

// validateEtcdClientTLS checks the embedded member's client URL security: https unless
// etcd-allow-insecure-client says otherwise, and either every certificate file given (the
// member's and the apiserver's) or none (all generated).
func (c *Config) validateEtcdClientTLS() []error {
	if len(c.EtcdServers) > 0 {
		return c.validateEtcdServers()
	}
	u, err := url.Parse(c.EtcdListenClientURL)
	if err != nil {
		return nil // reported with the URL checks
	}
	member := []struct{ key, file string }{
		{"etcd-cert-file", c.EtcdMemberCertFile}, {"etcd-key-file", c.EtcdMemberKeyFile}, {"etcd-trusted-ca-file", c.EtcdTrustedCAFile},
	}
	given := ""
	for _, m := range member {
		if m.file != "" && given == "" {
			given = m.key
		}
	}
	var errs []error
	switch u.Scheme {
	case "http":
		if !c.EtcdAllowInsecureClient {
			errs = append(errs, config.FieldErrorf("etcd-listen-client-url", "%q is plain HTTP: any process on the machine could read and write "+
				"every object in etcd, Secrets included, past authentication, RBAC and audit; use https:// (the default, with client "+
				"certificates generated under cert-dir/etcd) or, if you must, set etcd-allow-insecure-client: true", c.EtcdListenClientURL))
		}
		if given != "" {
			errs = append(errs, config.FieldErrorf(given, "needs an https:// etcd-listen-client-url, not %q", c.EtcdListenClientURL))
		}
		return errs
	case "https":
	default:
		return nil // reported with the URL checks
	}
	if given == "" {
		if c.EtcdCertFile != "" || c.EtcdKeyFile != "" || c.EtcdCAFile != "" {
			errs = append(errs, config.FieldErrorf("etcd-certfile", "etcd-certfile, etcd-keyfile and etcd-cafile for the embedded etcd member "+
				"go with etcd-cert-file, etcd-key-file and etcd-trusted-ca-file (the generated etcd CA trusts only the generated "+
				"apiserver-etcd-client certificate); leave them out to use the generated certificates"))
		}
		return errs
	}
	for _, m := range append(member, struct{ key, file string }{"etcd-certfile", c.EtcdCertFile}, struct{ key, file string }{"etcd-keyfile", c.EtcdKeyFile}) {
		if m.file == "" {
			errs = append(errs, config.FieldErrorf(m.key, "needed with %s: the embedded etcd member's client TLS files are given all or none", given))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return checkEtcdTLSFiles(c)
}

// validateEtcdServers checks what can be checked of --etcd-servers before connecting: each
// URL's scheme (etcd's client takes http, https, unix and unixs), and the client TLS files:
// the CA readable and PEM, the certificate with its key and the key its certificate, and not
// given for plain URLs, which would not use them. kube-apiserver finds some of these only when
// it starts (and a plain URL to a TLS-only etcd only after its 20 s wait).
func (c *Config) validateEtcdServers() []error {
	var errs []error
	tlsFiles := c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != ""
	for _, s := range c.EtcdServers {
		u, err := url.Parse(s)
		switch {
		case err != nil || u.Scheme == "":
			errs = append(errs, config.FieldErrorf("etcd-servers", "%q is not a URL (want https://host:port, or http://, unix://, unixs://)", s))
		case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix" && u.Scheme != "unixs":
			errs = append(errs, config.FieldErrorf("etcd-servers", "%q: scheme %q is not one of http, https, unix, unixs", s, u.Scheme))
		case (u.Scheme == "http" || u.Scheme == "https") && u.Host == "":
			errs = append(errs, config.FieldErrorf("etcd-servers", "%q has no host", s))
		case (u.Scheme == "unix" || u.Scheme == "unixs") && u.Host+u.Path == "":
			errs = append(errs, config.FieldErrorf("etcd-servers", "%q has no socket path", s))
		case tlsFiles && (u.Scheme == "http" || u.Scheme == "unix"):
			errs = append(errs, config.FieldErrorf("etcd-servers", "%q is plain (no TLS) but etcd-cafile, etcd-certfile or etcd-keyfile is given, "+
				"which only https:// and unixs:// use: use https://", s))
		}
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		errs = append(errs, config.FieldErrorf("etcd-certfile", "etcd-certfile and etcd-keyfile go together"))
	}
	for _, err := range []error{
		config.CheckCertificates("etcd-cafile", c.EtcdCAFile),
		config.CheckKeyPair("etcd-certfile", c.EtcdCertFile, "etcd-keyfile", c.EtcdKeyFile),
	} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkEtcdTLSFiles loads the given etcd client-side TLS files, so that a bad one is a
// configuration error naming its key rather than a failed start.
func checkEtcdTLSFiles(c *Config) []error {
	var errs []error
	if _, err := tls.LoadX509KeyPair(c.EtcdMemberCertFile, c.EtcdMemberKeyFile); err != nil {
		errs = append(errs, config.FieldErrorf("etcd-cert-file", "load certificate and key: %v", err))
	}
	if _, err := tls.LoadX509KeyPair(c.EtcdCertFile, c.EtcdKeyFile); err != nil {
		errs = append(errs, config.FieldErrorf("etcd-certfile", "load certificate and key: %v", err))
	}
	for key, file := range map[string]string{"etcd-trusted-ca-file": c.EtcdTrustedCAFile, "etcd-cafile": c.EtcdCAFile} {
		if file == "" {
			continue
		}
		data, err := os.ReadFile(file)
		if err == nil && !x509.NewCertPool().AppendCertsFromPEM(data) {
			err = fmt.Errorf("%s: no PEM certificate", file)
		}
		if err != nil {
			errs = append(errs, config.FieldErrorf(key, "%v", err))
		}
	}
	return errs
}

// certDir is where generated certificates live: cert-dir, or data-dir/pki.
func (s *Server) certDir() string {
	if s.cfg.CertDir != "" {
		return s.cfg.CertDir
	}
	return filepath.Join(s.cfg.DataDir, "pki")
}

// embeddedEtcdTLS returns the embedded member's client URL TLS (the files it serves and the CA
// whose client certificates it requires) and the TLS config of the apiserver's own client:
// the files given by flags, or the ones certs.EnsureEtcd generates (and reuses) in certDir.
// A plain http:// client URL (etcd-allow-insecure-client) has none.
func (s *Server) embeddedEtcdTLS() (embedetcd.Config, error) {
	u, err := url.Parse(s.cfg.EtcdListenClientURL)
	if err != nil || u.Scheme != "https" {
		return embedetcd.Config{}, nil
	}
	if s.cfg.EtcdMemberCertFile != "" {
		ca := s.cfg.EtcdCAFile
		if ca == "" {
			ca = s.cfg.EtcdTrustedCAFile
		}
		client, err := certs.EtcdClientTLSConfig(s.cfg.EtcdCertFile, s.cfg.EtcdKeyFile, ca)
		if err != nil {
			return embedetcd.Config{}, fmt.Errorf("apiserver: embedded etcd client TLS: %w", err)
		}
		return embedetcd.Config{CertFile: s.cfg.EtcdMemberCertFile, KeyFile: s.cfg.EtcdMemberKeyFile,
			TrustedCAFile: s.cfg.EtcdTrustedCAFile, ClientTLS: client}, nil
	}
	var hosts []string
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsUnspecified() {
		hosts = append(hosts, u.Hostname())
	}
	eb, err := certs.EnsureEtcd(s.certDir(), hosts, 0)
	if err != nil {
		return embedetcd.Config{}, fmt.Errorf("apiserver: embedded etcd certificates: %w", err)
	}
	if len(eb.Generated) > 0 {
		s.log.Info("generated embedded etcd certificates", "dir", eb.Dir, "files", eb.Generated)
	}
	client, err := eb.ClientTLSConfig()
	if err != nil {
		return embedetcd.Config{}, fmt.Errorf("apiserver: embedded etcd client TLS: %w", err)
	}
	return embedetcd.Config{CertFile: eb.ServerCert, KeyFile: eb.ServerKey, TrustedCAFile: eb.CACert, ClientTLS: client}, nil
}
