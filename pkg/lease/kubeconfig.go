package lease

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Credentials say how to reach and authenticate to the apiserver.
type Credentials struct {
	Server string      // https://host:port
	TLS    *tls.Config // CA and client certificate
	Token  string      // bearer token, if the kubeconfig has one
}

// kubeconfig is the part of a kubeconfig file (client-go's clientcmd format) the elector uses.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
			TLSServerName            string `yaml:"tls-server-name"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// LoadKubeconfig reads the current context of a kubeconfig file (as kubectl and kube-vip
// use, e.g. /etc/kubernetes/admin.conf): the server, its CA, and a client certificate or
// token. server, when not empty, replaces the file's server URL (the local apiserver, so
// that the election does not depend on the VIP it decides about). Relative file names in
// the kubeconfig are relative to its directory, as in client-go.
func LoadKubeconfig(path, server string) (*Credentials, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lease: read kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, fmt.Errorf("lease: kubeconfig %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	ctxName := kc.CurrentContext
	if ctxName == "" && len(kc.Contexts) == 1 {
		ctxName = kc.Contexts[0].Name
	}
	var clusterName, userName string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == ctxName {
			clusterName, userName, found = c.Context.Cluster, c.Context.User, true
		}
	}
	if !found {
		return nil, fmt.Errorf("lease: kubeconfig %s: no context %q (set current-context)", path, ctxName)
	}
	creds := &Credentials{TLS: &tls.Config{MinVersion: tls.VersionTLS12}}
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		creds.Server = c.Cluster.Server
		creds.TLS.ServerName = c.Cluster.TLSServerName
		creds.TLS.InsecureSkipVerify = c.Cluster.InsecureSkipTLSVerify
		ca, err := pemData(c.Cluster.CertificateAuthorityData, rel(c.Cluster.CertificateAuthority))
		if err != nil {
			return nil, fmt.Errorf("lease: kubeconfig %s: cluster %s: certificate authority: %w", path, clusterName, err)
		}
		if ca != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("lease: kubeconfig %s: cluster %s: no PEM certificate in the certificate authority", path, clusterName)
			}
			creds.TLS.RootCAs = pool
		}
	}
	if !found {
		return nil, fmt.Errorf("lease: kubeconfig %s: no cluster %q", path, clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		cert, err := pemData(u.User.ClientCertificateData, rel(u.User.ClientCertificate))
		if err != nil {
			return nil, fmt.Errorf("lease: kubeconfig %s: user %s: client certificate: %w", path, userName, err)
		}
		key, err := pemData(u.User.ClientKeyData, rel(u.User.ClientKey))
		if err != nil {
			return nil, fmt.Errorf("lease: kubeconfig %s: user %s: client key: %w", path, userName, err)
		}
		if cert != nil || key != nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("lease: kubeconfig %s: user %s: client certificate and key: %w", path, userName, err)
			}
			creds.TLS.Certificates = []tls.Certificate{pair}
		}
		creds.Token = u.User.Token
		if creds.Token == "" && u.User.TokenFile != "" {
			b, err := os.ReadFile(rel(u.User.TokenFile))
			if err != nil {
				return nil, fmt.Errorf("lease: kubeconfig %s: user %s: %w", path, userName, err)
			}
			creds.Token = strings.TrimSpace(string(b))
		}
	}
	if server != "" {
		creds.Server = server
	}
	if !strings.HasPrefix(creds.Server, "https://") && !strings.HasPrefix(creds.Server, "http://") {
		return nil, fmt.Errorf("lease: kubeconfig %s: server %q is not an https:// URL", path, creds.Server)
	}
	creds.Server = strings.TrimSuffix(creds.Server, "/")
	return creds, nil
}

// pemData returns the base64-decoded inline data, else the file's contents, else nil.
func pemData(inline, file string) ([]byte, error) {
	if inline != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(inline))
		if err != nil {
			return nil, errors.New("the -data field is not base64")
		}
		return b, nil
	}
	if file == "" {
		return nil, nil
	}
	return os.ReadFile(file)
}
