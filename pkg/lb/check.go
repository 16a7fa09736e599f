package lb

import "github.com/hacp/hacp/pkg/config"

// CheckHost checks what --check-config can verify without starting beyond Validate: that
// every certificate in --check-ca and --check-cert parses. The error is a config.FieldError.
func (c *Config) CheckHost() error {
	if err := config.CheckCertificates("check-ca", c.CheckCA); err != nil {
		return err
	}
	return config.CheckCertificates("check-cert", c.CheckCert)
}
