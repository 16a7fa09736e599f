package certs

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// The embedded etcd member's client-side PKI, relative to the bundle directory, with
// kubeadm's names: its own CA (so that no certificate of the cluster CA opens etcd), the
// member's serving certificate for its client URL, and the apiserver's client certificate.
const (
	EtcdCACertFile     = "etcd/ca.crt"
	EtcdCAKeyFile      = "etcd/ca.key"
	EtcdServerCertFile = "etcd/server.crt"
	EtcdServerKeyFile  = "etcd/server.key"
	EtcdClientCertFile = "apiserver-etcd-client.crt"
	EtcdClientKeyFile  = "apiserver-etcd-client.key"
	// EtcdClientName is the apiserver's etcd client certificate's CN (kubeadm's).
	EtcdClientName = "kube-apiserver-etcd-client"
)

// EtcdBundle is the embedded etcd member's client-side PKI on disk.
type EtcdBundle struct {
	// Dir is the bundle directory (the etcd files are in its etcd/ subdirectory).
	Dir string
	// File paths (PEM).
	CACert, CAKey         string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	// Generated lists the files written by this EnsureEtcd call, relative to Dir
	// (etcd/ca.crt, ...), empty when everything was reused.
	Generated []string
}

// EnsureEtcd makes dir hold the embedded etcd member's client-side PKI: etcd/ca.crt and
// etcd/ca.key, etcd/server.crt and etcd/server.key (for hosts, loopback always in; server and
// client use, as etcd's own gRPC gateway dials the member with it) and
// apiserver-etcd-client.crt and .key (client use). What exists is reused: the CA is never
// replaced, and a leaf only when it no longer works (unreadable, not signed by etcd/ca.crt,
// expiring within a day, or the server's names differ from hosts). Keys are ECDSA P-256,
// written 0600; the directories are 0700.
func EnsureEtcd(dir string, hosts []string, validFor time.Duration) (*EtcdBundle, error) {
	if validFor <= 0 {
		validFor = DefaultValidFor
	}
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		return nil, fmt.Errorf("certs: create %s: %w", filepath.Join(dir, "etcd"), err)
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	eb := &EtcdBundle{Dir: dir, CACert: at(EtcdCACertFile), CAKey: at(EtcdCAKeyFile),
		ServerCert: at(EtcdServerCertFile), ServerKey: at(EtcdServerKeyFile),
		ClientCert: at(EtcdClientCertFile), ClientKey: at(EtcdClientKeyFile)}
	b := &Bundle{Dir: dir}
	now := time.Now()
	ca, caKey, _, err := b.ensureCAAt(eb.CACert, eb.CAKey, "hacp-etcd-ca", now)
	if err != nil {
		return nil, err
	}
	ips, dns := splitHosts(hosts)
	serverOK := func(c *x509.Certificate) bool {
		return slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) &&
			sameIPs(c.IPAddresses, ips) && sameStrings(c.DNSNames, dns)
	}
	serverTmpl := func() *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: "hacp-etcd-server"}, IPAddresses: ips, DNSNames: dns,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	}
	if _, _, _, err := b.ensureLeaf(eb.ServerCert, eb.ServerKey, ca, caKey, now, validFor, serverTmpl, serverOK); err != nil {
		return nil, err
	}
	clientOK := func(c *x509.Certificate) bool {
		return c.Subject.CommonName == EtcdClientName && slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	clientTmpl := func() *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: EtcdClientName}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	if _, _, _, err := b.ensureLeaf(eb.ClientCert, eb.ClientKey, ca, caKey, now, validFor, clientTmpl, clientOK); err != nil {
		return nil, err
	}
	eb.Generated = b.Generated
	return eb, nil
}

// ClientTLSConfig returns the TLS config of the apiserver's etcd client: it trusts only the
// etcd CA and presents apiserver-etcd-client.crt.
func (eb *EtcdBundle) ClientTLSConfig() (*tls.Config, error) {
	return EtcdClientTLSConfig(eb.ClientCert, eb.ClientKey, eb.CACert)
}

// EtcdClientTLSConfig returns a TLS config for an etcd client that presents certFile/keyFile
// and trusts only caFile, as etcdctl's --cert, --key and --cacert do.
func EtcdClientTLSConfig(certFile, keyFile, caFile string) (*tls.Config, error) {
	info := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
	c, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("certs: etcd client TLS (%s, %s, CA %s): %w", certFile, keyFile, caFile, err)
	}
	return c, nil
}

// LoadEtcdClientTLS returns the etcd client TLS config from the files EnsureEtcd wrote in dir
// (for tools and tests that reach an apiserver's embedded member).
func LoadEtcdClientTLS(dir string) (*tls.Config, error) {
	return EtcdClientTLSConfig(filepath.Join(dir, EtcdClientCertFile), filepath.Join(dir, EtcdClientKeyFile), filepath.Join(dir, EtcdCACertFile))
}
