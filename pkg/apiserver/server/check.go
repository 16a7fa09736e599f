package server

import (
	"errors"

	"github.com/hacp/hacp/pkg/config"
)

// CheckHost checks, for --check-config, the files Validate leaves to the start: the
// embedded etcd member's peer certificate, key and CA. (Validate already loads the serving,
// client, etcd, kubelet and front-proxy certificates and keys.) The errors are
// config.FieldErrors.
func (c *Config) CheckHost() error {
	return errors.Join(
		config.CheckKeyPair("etcd-peer-cert-file", c.EtcdPeerCertFile, "etcd-peer-key-file", c.EtcdPeerKeyFile),
		config.CheckCertificates("etcd-peer-trusted-ca-file", c.EtcdPeerTrustedCAFile),
	)
}
