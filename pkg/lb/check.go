package lb

import "github.com/hacp/hacp/pkg/config"

// CheckHost checks what --check-config can verify without starting beyond Validate: that
// every certificate in --check-ca parses. The error is a config.FieldError.
func (c *Config) CheckHost() error {
	return config.CheckCertificates("check-ca", c.CheckCA)
}
