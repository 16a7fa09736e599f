package health

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/hacp/hacp/internal/certreload"
)

// ClientTLS is the TLS of HTTPS probes: the CA that verifies targets and the client pair
// presented, each reloaded from its file when it changes (a renewed certificate is used from
// the next probe on, as every probe is a new handshake). Its Items go into a certreload.Set.
type ClientTLS struct {
	base *tls.Config
	ca   *certreload.CABundle // nil: the system roots
	pair *certreload.KeyPair  // nil: none presented
}

// NewClientTLS loads the CA and client files of cfg (roles "check-ca" and "check-client").
func NewClientTLS(cfg Config, log *slog.Logger) (*ClientTLS, error) {
	t := &ClientTLS{base: &tls.Config{InsecureSkipVerify: cfg.Insecure, ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}} //nolint:gosec // Insecure is the user's --check-insecure
	var err error
	if cfg.CAFile != "" {
		if t.ca, err = certreload.NewCABundle("check-ca", cfg.CAFile, log); err != nil {
			return nil, fmt.Errorf("health: CA file: %w", err)
		}
	}
	if cfg.ClientCert != "" || cfg.ClientKey != "" {
		if t.pair, err = certreload.NewKeyPair("check-client", cfg.ClientCert, cfg.ClientKey, log); err != nil {
			return nil, fmt.Errorf("health: client certificate: %w", err)
		}
	}
	return t, nil
}

// Items are the reloadable parts, for a certreload.Set.
func (t *ClientTLS) Items() []certreload.Item {
	var out []certreload.Item
	if t.ca != nil {
		out = append(out, t.ca)
	}
	if t.pair != nil {
		out = append(out, t.pair)
	}
	return out
}

// config is the TLS config of one handshake, with what is in use now.
func (t *ClientTLS) config() *tls.Config {
	c := t.base.Clone()
	if t.ca != nil {
		c.RootCAs = t.ca.Pool()
	}
	if t.pair != nil {
		c.GetClientCertificate = t.pair.GetClientCertificate
	}
	return c
}

// dialTLS is http.Transport.DialTLSContext: a handshake with the config in use now (the
// ServerName, when not set, is the target's host, as Transport does).
func (t *ClientTLS) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	d := tls.Dialer{Config: t.config()}
	return d.DialContext(ctx, network, addr)
}
