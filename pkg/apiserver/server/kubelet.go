package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/proxy"
	"github.com/hacp/hacp/pkg/config"
	corev1 "k8s.io/api/core/v1"
)

// KubeletConfig is how the apiserver reaches kubelets for pods/log, exec, attach,
// portforward and nodes/proxy (kube-apiserver's --kubelet-* flags).
type KubeletConfig struct {
	KubeletClientCertificate    string        `yaml:"kubelet-client-certificate"`
	KubeletClientKey            string        `yaml:"kubelet-client-key"`
	KubeletCertificateAuthority string        `yaml:"kubelet-certificate-authority"`
	KubeletPreferredAddressType []string      `yaml:"kubelet-preferred-address-types"`
	KubeletTimeout              time.Duration `yaml:"kubelet-timeout"`
	// ProxyAllowLoopback lets the proxy subresources reach loopback addresses (tests on
	// one host); upstream always refuses them.
	ProxyAllowLoopback bool `yaml:"proxy-allow-loopback"`
}

func defaultKubeletConfig() KubeletConfig {
	types := make([]string, len(proxy.DefaultPreferredAddressTypes))
	for i, t := range proxy.DefaultPreferredAddressTypes {
		types[i] = string(t)
	}
	return KubeletConfig{KubeletPreferredAddressType: types, KubeletTimeout: 5 * time.Second}
}

func (c *KubeletConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.KubeletClientCertificate, "kubelet-client-certificate", c.KubeletClientCertificate, "client certificate `file` presented to kubelets (logs, exec, attach, port-forward, nodes/proxy)")
	fs.StringVar(&c.KubeletClientKey, "kubelet-client-key", c.KubeletClientKey, "key `file` of --kubelet-client-certificate")
	fs.StringVar(&c.KubeletCertificateAuthority, "kubelet-certificate-authority", c.KubeletCertificateAuthority, "CA bundle `file` that verifies kubelets' serving certificates (unset: not verified, as upstream)")
	config.StringList(fs, &c.KubeletPreferredAddressType, "kubelet-preferred-address-types", "Node address `types` tried in order to reach a kubelet (comma-separated or repeatable)")
	fs.DurationVar(&c.KubeletTimeout, "kubelet-timeout", c.KubeletTimeout, "how long connecting to a kubelet may take")
	fs.BoolVar(&c.ProxyAllowLoopback, "proxy-allow-loopback", c.ProxyAllowLoopback, "let pods/proxy, nodes/proxy and services/proxy reach loopback and link-local addresses, which upstream refuses (single-host tests only)")
}

var nodeAddressTypes = []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeExternalDNS}

func (c *KubeletConfig) validate() []error {
	var errs []error
	if (c.KubeletClientCertificate == "") != (c.KubeletClientKey == "") {
		errs = append(errs, config.FieldErrorf("kubelet-client-certificate", "kubelet-client-certificate and kubelet-client-key go together"))
	}
	if _, err := c.addressTypes(); err != nil {
		errs = append(errs, config.FieldErrorf("kubelet-preferred-address-types", "%v", err))
	}
	if c.KubeletTimeout < 0 {
		errs = append(errs, config.FieldErrorf("kubelet-timeout", "must not be negative"))
	}
	if _, err := c.tlsConfig(); err != nil {
		key := "kubelet-client-certificate"
		if errors.Is(err, errKubeletCA) {
			key = "kubelet-certificate-authority"
		}
		errs = append(errs, config.FieldErrorf(key, "%v", err))
	}
	return errs
}

func (c *KubeletConfig) addressTypes() ([]corev1.NodeAddressType, error) {
	var out []corev1.NodeAddressType
	for _, item := range c.KubeletPreferredAddressType {
		for _, t := range strings.Split(item, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			found := false
			for _, known := range nodeAddressTypes {
				if string(known) == t {
					out = append(out, known)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("%q is not one of %v", t, nodeAddressTypes)
			}
		}
	}
	return out, nil
}

var errKubeletCA = errors.New("read kubelet certificate authority")

// tlsConfig is the client TLS configuration for kubelets.
func (c *KubeletConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.KubeletClientCertificate != "" && c.KubeletClientKey != "" {
		cert, err := tls.LoadX509KeyPair(c.KubeletClientCertificate, c.KubeletClientKey)
		if err != nil {
			return nil, fmt.Errorf("load kubelet client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.KubeletCertificateAuthority == "" {
		cfg.InsecureSkipVerify = true //nolint:gosec // upstream's behaviour without --kubelet-certificate-authority
		return cfg, nil
	}
	pem, err := os.ReadFile(c.KubeletCertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKubeletCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", errKubeletCA, c.KubeletCertificateAuthority)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// startConnector makes the registry serve the proxy-type subresources through a
// proxy.Connector.
func (s *Server) startConnector() error {
	tlsCfg, err := s.cfg.tlsConfig()
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	s.kubeletClientTLS(tlsCfg)
	types, err := s.cfg.addressTypes()
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	s.connector = proxy.New(proxy.Config{
		KubeletTLS: tlsCfg, PreferredAddressTypes: types, DialTimeout: s.cfg.KubeletTimeout,
		AllowLoopback: s.cfg.ProxyAllowLoopback,
	}, proxy.ObjectsFunc(s.registry.GetCore))
	s.registry.SetConnect(s.connector.Connect)
	if err := registerOnce(s.metrics.registry, s.connector.Metrics().Collectors()...); err != nil {
		return fmt.Errorf("apiserver: metrics: %w", err)
	}
	return nil
}

// Connector is what serves the proxy-type subresources (for tests: its open streams).
func (s *Server) Connector() *proxy.Connector { return s.connector }
