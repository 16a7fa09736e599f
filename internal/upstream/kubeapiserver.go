package upstream

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// KubeAPIServerArgs prepares dir for a standalone kube-apiserver peer (a fresh
// ServiceAccount key pair, and a static token file giving token to an admin in
// system:masters, since AlwaysAllow turns anonymous requests away) and returns its command
// line: etcdURL, loopback port, self-signed serving certificates under dir, AlwaysAllow,
// hacp's Service range, no endpoint reconciler, and no ServiceAccount admission (no
// controller-manager creates the default accounts). Callers append what they need.
func KubeAPIServerArgs(dir, etcdURL, port, token string) ([]string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": fmt.Appendf(nil, "%s,admin,,\"system:masters\"\n", token),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--authorization-mode=AlwaysAllow",
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--service-cluster-ip-range=10.96.0.0/12", // hacp's range
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins=ServiceAccount",
	}, nil
}
