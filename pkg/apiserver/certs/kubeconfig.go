package certs

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigContext is the cluster, user and context name written by
// WriteKubeconfig.
const KubeconfigContext = "hacp"

// WriteKubeconfig writes a kubeconfig to path that reaches server (for example
// "https://127.0.0.1:6443") as the admin user, with the CA and the admin
// credentials embedded so the file works on its own. The file is 0600.
func WriteKubeconfig(path, server string, b *Bundle) error {
	return writeKubeconfig(path, server, b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM)
}

// WriteClientKubeconfig is WriteKubeconfig for a new client certificate of user in groups
// (IssueClient), valid for validFor: the identity a controller-manager or scheduler runs as.
func WriteClientKubeconfig(path, server string, b *Bundle, user string, groups []string, validFor time.Duration) error {
	certPEM, keyPEM, err := b.IssueClient(user, groups, validFor)
	if err != nil {
		return err
	}
	return writeKubeconfig(path, server, b.CAPEM, certPEM, keyPEM)
}

func writeKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigContext] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[KubeconfigContext] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:  KubeconfigContext,
		AuthInfo: KubeconfigContext,
	}
	cfg.CurrentContext = KubeconfigContext
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("certs: kubeconfig: %w", err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("certs: kubeconfig: %w", err)
	}
	return writeFile(path, data, 0o600)
}
