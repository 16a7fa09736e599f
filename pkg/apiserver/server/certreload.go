package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync/atomic"

	"github.com/hacp/hacp/internal/certreload"
)

// reloadingCerts are the certificate files given by flags that the server reloads when they
// change, as kube-apiserver's dynamic certificates do: the serving pair, the client CA, the
// request-header CA, the front-proxy client pair and the kubelet client pair. The etcd
// client pair (and the embedded member's own pairs) are etcd's transport.TLSInfo, which reads
// the files at each handshake. ServiceAccount keys are read once, as upstream's.
type reloadingCerts struct {
	serving, proxyClient, kubeletClient *certreload.KeyPair
	clientCA, requestHeaderCA           *certreload.CABundle
	handshake                           atomic.Pointer[handshakeCAs]
}

// handshakeCAs is the pool the TLS handshake verifies client certificates with (client CA
// and request-header CA together), built from the PEM it was made of.
type handshakeCAs struct {
	pem  []byte
	pool *x509.CertPool
}

// setupCertReload loads the reloadable files (Validate loaded them already).
func (s *Server) setupCertReload() error {
	r := &reloadingCerts{}
	var items []certreload.Item
	pairs := []struct {
		into            **certreload.KeyPair
		role, flag      string
		certFile, keyFn string
	}{
		{&r.serving, "serving", "tls-cert-file", s.cfg.TLSCertFile, s.cfg.TLSKeyFile},
		{&r.proxyClient, "proxy-client", "proxy-client-cert-file", s.cfg.ProxyClientCertFile, s.cfg.ProxyClientKeyFile},
		{&r.kubeletClient, "kubelet-client", "kubelet-client-certificate", s.cfg.KubeletClientCertificate, s.cfg.KubeletClientKey},
	}
	for _, p := range pairs {
		if p.certFile == "" || p.keyFn == "" {
			continue
		}
		k, err := certreload.NewKeyPair(p.role, p.certFile, p.keyFn, s.log)
		if err != nil {
			return fmt.Errorf("apiserver: --%s: %w", p.flag, err)
		}
		*p.into = k
		items = append(items, k)
	}
	bundles := []struct {
		into       **certreload.CABundle
		role, flag string
		file       string
	}{
		{&r.clientCA, "client-ca", "client-ca-file", s.cfg.ClientCAFile},
		{&r.requestHeaderCA, "requestheader-client-ca", "requestheader-client-ca-file", s.cfg.RequestHeaderClientCAFile},
	}
	for _, b := range bundles {
		if b.file == "" {
			continue
		}
		ca, err := certreload.NewCABundle(b.role, b.file, s.log)
		if err != nil {
			return fmt.Errorf("apiserver: --%s: %w", b.flag, err)
		}
		*b.into = ca
		items = append(items, ca)
	}
	// One set for the server's life (New makes it), registered once: a restarted Start
	// replaces its items.
	s.certs = r
	s.certSet.Replace(items...)
	return registerOnce(s.metrics.registry, s.certSet)
}

// ReloadCertificates reads the certificate files again now (SIGHUP) rather than at the next
// poll, and returns how many changed.
func (s *Server) ReloadCertificates() int {
	return s.certSet.ReloadNow()
}

// handshakeClientCAs is the pool of client CA and request-header CA in use, rebuilt when
// either was reloaded.
func (s *Server) handshakeClientCAs() (*x509.CertPool, error) {
	var all []byte
	for _, ca := range []func() ([]byte, error){s.clientCAPEM, s.requestHeaderCA} {
		data, err := ca()
		if err != nil {
			return nil, err
		}
		all = append(append(all, data...), '\n')
	}
	if cur := s.certs.handshake.Load(); cur != nil && bytes.Equal(cur.pem, all) {
		return cur.pool, nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(all)
	s.certs.handshake.Store(&handshakeCAs{pem: all, pool: pool})
	return pool, nil
}

// dynamicTLS makes cfg serve the reloaded serving pair and verify client certificates with
// the reloaded CAs, each handshake taking what is in use then.
func (s *Server) dynamicTLS(cfg *tls.Config) error {
	if s.certs.serving != nil {
		cfg.Certificates = nil
		cfg.GetCertificate = s.certs.serving.GetCertificate
	}
	pool, err := s.handshakeClientCAs()
	if err != nil {
		return err
	}
	cfg.ClientCAs = pool
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		pool, err := s.handshakeClientCAs()
		if err != nil {
			return nil, err
		}
		if pool == cfg.ClientCAs {
			return nil, nil // nil: the handshake goes on with cfg itself
		}
		c := cfg.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = pool
		return c, nil
	}
	return nil
}

// kubeletClientTLS makes cfg present the reloaded kubelet client pair.
func (s *Server) kubeletClientTLS(cfg *tls.Config) {
	if k := s.certs.kubeletClient; k != nil {
		cfg.Certificates = nil
		cfg.GetClientCertificate = k.GetClientCertificate
	}
}
