// Package statustls serves vipd's and lbproxy's /status and /metrics on a second, TLS
// listener that only clients with a certificate of a given CA reach (hacpctl on another
// master, say), while the plain status address stays on loopback.
package statustls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

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
	f := &files{cfg: *c}
	if _, err := f.certificate(); err != nil {
		return config.FieldErrorf("status-tls-cert-file", "%v", err)
	}
	if _, err := f.clientCAs(); err != nil {
		return config.FieldErrorf("status-client-ca-file", "%v", err)
	}
	return nil
}

// Listen opens the TLS listener, or returns nil, nil when Addr is empty. The certificate,
// key and client CAs are read now and again whenever one of the files changes, so that
// renewed files take effect without a restart.
func (c *Config) Listen() (net.Listener, error) {
	if c.Addr == "" {
		return nil, nil
	}
	f := &files{cfg: *c}
	if _, err := f.certificate(); err != nil {
		return nil, err
	}
	if _, err := f.clientCAs(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("status: listen on --status-tls-addr %s: %w", c.Addr, err)
	}
	return tls.NewListener(ln, &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, err := f.certificate()
			if err != nil {
				return nil, err
			}
			pool, err := f.clientCAs()
			if err != nil {
				return nil, err
			}
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*cert},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    pool,
			}, nil
		},
	}), nil
}

// files caches what was read from the files, keyed by their modification times.
type files struct {
	cfg Config

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp [2]time.Time
	pool      *x509.CertPool
	poolStamp time.Time
}

func mtime(path string) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// certificate returns the key pair, read again when either file changed; a pair that
// does not load keeps the last good one.
func (f *files) certificate() (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ct, err1 := mtime(f.cfg.CertFile)
	kt, err2 := mtime(f.cfg.KeyFile)
	if err := errors.Join(err1, err2); err != nil && f.cert == nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	stamp := [2]time.Time{ct, kt}
	if f.cert != nil && (stamp == f.certStamp || err1 != nil || err2 != nil) {
		return f.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(f.cfg.CertFile, f.cfg.KeyFile)
	if err != nil {
		if f.cert != nil {
			return f.cert, nil
		}
		return nil, fmt.Errorf("status: load %s and %s: %w", f.cfg.CertFile, f.cfg.KeyFile, err)
	}
	f.cert, f.certStamp = &cert, stamp
	return f.cert, nil
}

// clientCAs returns the client CA pool, read again when the file changed.
func (f *files) clientCAs() (*x509.CertPool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := mtime(f.cfg.ClientCAFile)
	if err != nil || (f.pool != nil && t == f.poolStamp) {
		if f.pool != nil {
			return f.pool, nil
		}
		return nil, fmt.Errorf("status: %w", err)
	}
	data, err := os.ReadFile(f.cfg.ClientCAFile)
	pool := x509.NewCertPool()
	if err == nil && !pool.AppendCertsFromPEM(data) {
		err = fmt.Errorf("%s holds no PEM certificate", f.cfg.ClientCAFile)
	}
	if err != nil {
		if f.pool != nil {
			return f.pool, nil
		}
		return nil, fmt.Errorf("status: client CA: %w", err)
	}
	f.pool, f.poolStamp = pool, t
	return f.pool, nil
}
