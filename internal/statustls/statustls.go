// Package statustls serves vipd's and lbproxy's /status and /metrics on a second, TLS
// listener that only clients with a certificate of a given CA reach (hacpctl on another
// master, say), while the plain status address stays on loopback.
package statustls

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"

	"github.com/hacp/hacp/internal/certreload"
	"github.com/hacp/hacp/pkg/config"
)

// Config is the TLS status listener's settings, the same keys in vipd and lbproxy.
type Config struct {
	Addr         string `yaml:"status-tls-addr"`
	CertFile     string `yaml:"status-tls-cert-file"`
	KeyFile      string `yaml:"status-tls-key-file"`
	ClientCAFile string `yaml:"status-client-ca-file"`
}

// AddFlags binds the flags to c.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "status-tls-addr", c.Addr, "also serve /status and /metrics over TLS on this `host:port`, to clients with a certificate of --status-client-ca-file only (empty: off)")
	fs.StringVar(&c.CertFile, "status-tls-cert-file", c.CertFile, "serving certificate `file` (PEM) of --status-tls-addr; re-read when it changes")
	fs.StringVar(&c.KeyFile, "status-tls-key-file", c.KeyFile, "private key `file` (PEM) of --status-tls-cert-file")
	fs.StringVar(&c.ClientCAFile, "status-client-ca-file", c.ClientCAFile, "CA certificates `file` (PEM): --status-tls-addr requires a client certificate signed by one of them")
}

// Validate reports missing or malformed settings as config.FieldErrors.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return nil
	}
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, config.FieldErrorf("status-tls-addr", "want host:port, got %q", c.Addr))
	}
	for key, v := range map[string]string{"status-tls-cert-file": c.CertFile, "status-tls-key-file": c.KeyFile, "status-client-ca-file": c.ClientCAFile} {
		if v == "" {
			errs = append(errs, config.FieldErrorf(key, "required with status-tls-addr (the TLS status listener needs a certificate and requires client certificates)"))
		}
	}
	return errors.Join(errs...)
}

// Check loads the files, for --check-config.
func (c *Config) Check() error {
	if c.Addr == "" {
		return nil
	}
	if _, err := certreload.NewKeyPair("status-tls", c.CertFile, c.KeyFile, nil); err != nil {
		return config.FieldErrorf("status-tls-cert-file", "%v", err)
	}
	if _, err := certreload.NewCABundle("status-client-ca", c.ClientCAFile, nil); err != nil {
		return config.FieldErrorf("status-client-ca-file", "%v", err)
	}
	return nil
}

// Listen opens the TLS listener, or returns nil, nil when Addr is empty. The certificate,
// key and client CAs are read now and again at each handshake (certreload keeps the last
// good ones), so that renewed files take effect from the next connection on without a
// restart.
func (c *Config) Listen() (net.Listener, error) {
	if c.Addr == "" {
		return nil, nil
	}
	pair, err := certreload.NewKeyPair("status-tls", c.CertFile, c.KeyFile, nil)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	cas, err := certreload.NewCABundle("status-client-ca", c.ClientCAFile, nil)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("status: listen on --status-tls-addr %s: %w", c.Addr, err)
	}
	return tls.NewListener(ln, &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			// A pair or bundle that does not load now keeps the last good one.
			_, _ = pair.Reload()
			_, _ = cas.Reload()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*pair.Certificate()},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    cas.Pool(),
			}, nil
		},
	}), nil
}
