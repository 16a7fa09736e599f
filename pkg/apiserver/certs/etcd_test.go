package certs

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// etcdFiles are the files EnsureEtcd writes, in the order it writes them.
var etcdFiles = []string{EtcdCACertFile, EtcdCAKeyFile, EtcdServerCertFile, EtcdServerKeyFile, EtcdClientCertFile, EtcdClientKeyFile}

func mustEnsureEtcd(t *testing.T, dir string, hosts []string) *EtcdBundle {
	t.Helper()
	eb, err := EnsureEtcd(dir, hosts, 0)
	if err != nil {
		t.Fatalf("EnsureEtcd: %v", err)
	}
	return eb
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	_, certs, err := loadPair(path, path[:len(path)-len(".crt")]+".key")
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// TestEnsureEtcdGenerates: kubeadm's files, private keys 0600, a CA of its own, a server
// certificate for the client URL's host (server and client use) and a client-only one.
func TestEnsureEtcdGenerates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	eb := mustEnsureEtcd(t, dir, []string{"10.77.0.10"})
	if !slices.Equal(eb.Generated, etcdFiles) {
		t.Errorf("Generated = %v, want %v", eb.Generated, etcdFiles)
	}
	for _, f := range []string{EtcdCAKeyFile, EtcdServerKeyFile, EtcdClientKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", f, fi.Mode().Perm())
		}
	}
	ca := parseCert(t, eb.CACert)
	if !ca.IsCA || ca.Subject.CommonName != "hacp-etcd-ca" {
		t.Errorf("etcd CA: IsCA %v, CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	server, client := parseCert(t, eb.ServerCert), parseCert(t, eb.ClientCert)
	for _, h := range []string{"10.77.0.10", "127.0.0.1", "localhost"} {
		if err := server.VerifyHostname(h); err != nil {
			t.Errorf("server certificate: %v", err)
		}
	}
	tests := []struct {
		name string
		cert *x509.Certificate
		eku  []x509.ExtKeyUsage
	}{
		{"server", server, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{"client", client, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cert.CheckSignatureFrom(ca); err != nil {
				t.Errorf("not signed by the etcd CA: %v", err)
			}
			if !slices.Equal(tc.cert.ExtKeyUsage, tc.eku) {
				t.Errorf("ExtKeyUsage = %v, want %v", tc.cert.ExtKeyUsage, tc.eku)
			}
		})
	}
	if client.Subject.CommonName != EtcdClientName {
		t.Errorf("client CN = %q", client.Subject.CommonName)
	}
	if _, err := eb.ClientTLSConfig(); err != nil {
		t.Errorf("ClientTLSConfig: %v", err)
	}
}

// TestEnsureEtcdReuses: a second call writes nothing, and the cluster PKI beside it is untouched.
func TestEnsureEtcdReuses(t *testing.T) {
	dir := t.TempDir()
	mustEnsure(t, dir, Options{})
	mustEnsureEtcd(t, dir, nil)
	before := map[string][]byte{}
	for _, f := range append([]string{CACertFile, CAKeyFile}, etcdFiles...) {
		before[f] = readFile(t, filepath.Join(dir, f))
	}
	if eb := mustEnsureEtcd(t, dir, nil); len(eb.Generated) != 0 {
		t.Errorf("second EnsureEtcd generated %v, want nothing", eb.Generated)
	}
	if b := mustEnsure(t, dir, Options{}); len(b.Generated) != 0 {
		t.Errorf("Ensure after EnsureEtcd generated %v, want nothing", b.Generated)
	}
	for f, data := range before {
		if !bytes.Equal(data, readFile(t, filepath.Join(dir, f))) {
			t.Errorf("%s changed", f)
		}
	}
	if bytes.Equal(before[CACertFile], before[EtcdCACertFile]) {
		t.Errorf("the etcd CA is the cluster CA")
	}
}

// TestEnsureEtcdBrokenCA: a broken etcd CA is an error that names the files, never replaced.
func TestEnsureEtcdBrokenCA(t *testing.T) {
	dir := t.TempDir()
	mustEnsureEtcd(t, dir, nil)
	if err := os.WriteFile(filepath.Join(dir, EtcdCACertFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureEtcd(dir, nil, 0)
	if err == nil || !strings.Contains(err.Error(), "remove etcd/ca.crt and etcd/ca.key") {
		t.Fatalf("EnsureEtcd with a broken CA: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, EtcdCACertFile)); string(got) != "garbage" {
		t.Errorf("broken CA was overwritten")
	}
}
