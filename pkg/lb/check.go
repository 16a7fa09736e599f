package lb

import (
	"errors"

	"github.com/hacp/hacp/pkg/config"
)

// CheckHost checks what --check-config can verify without starting beyond Validate: that
// every certificate in --check-ca and --check-cert parses, and the TLS status listener's
// files load. The errors are config.FieldErrors.
func (c *Config) CheckHost() error {
	return errors.Join(config.CheckCertificates("check-ca", c.CheckCA),
		config.CheckCertificates("check-cert", c.CheckCert), c.StatusTLS.Check())
}
