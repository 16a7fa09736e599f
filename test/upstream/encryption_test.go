package upstream_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hacp/hacp/internal/testkms"
	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestEncryptionSharedWithKubeAPIServer: with one EncryptionConfiguration file given to both,
// a Secret hacp encrypted is read by kube-apiserver 1.37, and one kube-apiserver encrypted is
// read (get and list) by hacp, for aescbc, secretbox and KMS v2 (one test plugin serving both).
func TestEncryptionSharedWithKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	for _, tc := range []struct {
		name      string
		providers func(t *testing.T) string
		prefix    string
	}{
		{"aescbc", func(t *testing.T) string { return keyedProvider(t, "aescbc", 32) }, "k8s:enc:aescbc:v1:key1:"},
		{"secretbox", func(t *testing.T) string { return keyedProvider(t, "secretbox", 32) }, "k8s:enc:secretbox:v1:key1:"},
		{"kms v2", func(t *testing.T) string {
			p := testkms.Start(t, "kek-1")
			return fmt.Sprintf("  - kms:\n      apiVersion: v2\n      name: testkms\n      endpoint: %s\n      timeout: 5s\n", p.Endpoint)
		}, "k8s:enc:kms:v2:testkms:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etcd := etcdtest.Start(t)
			ec, err := etcd.Client()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ec.Close() })
			path := filepath.Join(t.TempDir(), "encryption.yaml")
			cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" +
				tc.providers(t) + "  - identity: {}\n"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()

			hacp, hcs := startEncryptedHacp(t, etcd.ClientURL(), path)
			createSecret(t, hcs, "from-hacp")
			wantEncrypted(t, ec, "from-hacp", tc.prefix)
			_ = hacp.Shutdown()

			kas := startKubeAPIServer(t, bin, etcd.ClientURL(), "--encryption-provider-config="+path)
			kcs := kubernetes.NewForConfigOrDie(kas.config)
			wantSecret(t, "kube-apiserver", kcs, "from-hacp")
			createSecret(t, kcs, "from-kas")
			wantEncrypted(t, ec, "from-kas", tc.prefix)
			kas.stop(t)

			_, hcs = startEncryptedHacp(t, etcd.ClientURL(), path)
			wantSecret(t, "hacp", hcs, "from-kas")
			wantSecret(t, "hacp", hcs, "from-hacp")
			list, err := hcs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 2 {
				t.Fatalf("hacp list: %v %d items, want both", err, len(list.Items))
			}
		})
	}
}

// keyedProvider is a providers list entry of kind (aescbc, aesgcm, secretbox) with one new
// random key "key1" of n bytes.
func keyedProvider(t *testing.T, kind string, n int) string {
	t.Helper()
	key := make([]byte, n)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("  - %s:\n      keys:\n      - name: key1\n        secret: %s\n", kind, base64.StdEncoding.EncodeToString(key))
}

func startEncryptedHacp(t *testing.T, etcdURL, path string) (*server.Server, kubernetes.Interface) {
	t.Helper()
	s := servertest.New(t, func(cfg *server.Config) {
		cfg.EtcdServers = []string{etcdURL}
		cfg.EncryptionProviderConfig = path
	})
	return s, kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
}

// secretData is the content of the test's Secret named name.
func secretData(name string) []byte { return []byte("plaintext of " + name) }

func createSecret(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"k": secretData(name)}}
	if _, err := cs.CoreV1().Secrets("default").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
}

func wantSecret(t *testing.T, who string, cs kubernetes.Interface, name string) {
	t.Helper()
	got, err := cs.CoreV1().Secrets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s get secret %s: %v", who, name, err)
	}
	if !bytes.Equal(got.Data["k"], secretData(name)) {
		t.Fatalf("%s reads secret %s as %q, want %q", who, name, got.Data["k"], secretData(name))
	}
}

// wantEncrypted checks the Secret's etcd value has prefix and not its plaintext.
func wantEncrypted(t *testing.T, ec *clientv3.Client, name, prefix string) {
	t.Helper()
	resp, err := ec.Get(context.Background(), "/registry/secrets/default/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get secret %s: %v %v", name, resp, err)
	}
	v := resp.Kvs[0].Value
	if !bytes.HasPrefix(v, []byte(prefix)) || bytes.Contains(v, secretData(name)) {
		t.Fatalf("etcd value of secret %s starts %.40q: want prefix %q and no plaintext", name, v, prefix)
	}
}
