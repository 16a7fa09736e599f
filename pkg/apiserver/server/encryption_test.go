package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/testkms"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// newKey returns a random base64 key of n bytes, as an EncryptionConfiguration holds it.
func newKey(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// writeEncryptionConfig writes an EncryptionConfiguration whose secrets use providers (YAML
// list items, indented by 6) and returns its path.
func writeEncryptionConfig(t *testing.T, dir, providers string) string {
	t.Helper()
	path := filepath.Join(dir, "encryption.yaml")
	body := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// aesProvider is the providers list entry of one aescbc/aesgcm/secretbox provider with keys
// (name, secret pairs).
func aesProvider(kind string, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - %s:\n      keys:\n", kind)
	for i := 0; i+1 < len(keys); i += 2 {
		fmt.Fprintf(&b, "      - name: %s\n        secret: %s\n", keys[i], keys[i+1])
	}
	return b.String()
}

// startEtcd starts an etcd for the test and a client of it.
func startEtcd(t *testing.T) (interface{ ClientURL() string }, *clientv3.Client) {
	t.Helper()
	etcd := etcdtest.Start(t)
	c, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return etcd, c
}

// startEncrypted starts hacp on etcdURL with the EncryptionConfiguration at path.
func startEncrypted(t *testing.T, etcdURL, path string, watchCache bool) (*server.Server, kubernetes.Interface) {
	t.Helper()
	s := servertest.New(t, func(cfg *server.Config) {
		cfg.EtcdServers = []string{etcdURL}
		cfg.EncryptionProviderConfig = path
		cfg.WatchCache = watchCache
	})
	return s, kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
}

// rawGet is the value etcd holds at key.
func rawGet(t *testing.T, c *clientv3.Client, key string) []byte {
	t.Helper()
	resp, err := c.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v %v", key, resp, err)
	}
	return resp.Kvs[0].Value
}

// secretWith is a Secret named name whose one value is data.
func secretWith(name, data string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"k": []byte(data)}}
}

// nextSecretEvent waits for the watch's next event.
func nextSecretEvent(t *testing.T, w watch.Interface) (watch.EventType, *corev1.Secret) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		s, ok := ev.Object.(*corev1.Secret)
		if !ok {
			t.Fatalf("watch event %s of %T: %v", ev.Type, ev.Object, ev.Object)
		}
		return ev.Type, s
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event in 30s")
	}
	return "", nil
}

// TestEncryptionAtRest: with each provider for secrets, the value in etcd carries the
// provider's k8s:enc: prefix and none of the plaintext; get, list and watch (with the watch
// cache on and off) decrypt, the old state of an update and of a deletion included; other
// resources stay unencrypted.
func TestEncryptionAtRest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		providers func(t *testing.T) string
		prefix    string
	}{
		{"aescbc", func(t *testing.T) string { return aesProvider("aescbc", "key1", newKey(t, 32)) }, "k8s:enc:aescbc:v1:key1:"},
		{"aesgcm", func(t *testing.T) string { return aesProvider("aesgcm", "key1", newKey(t, 16)) }, "k8s:enc:aesgcm:v1:key1:"},
		{"secretbox", func(t *testing.T) string { return aesProvider("secretbox", "key1", newKey(t, 32)) }, "k8s:enc:secretbox:v1:key1:"},
		{"kms v2", func(t *testing.T) string {
			p := testkms.Start(t, "kek-1")
			return fmt.Sprintf("  - kms:\n      apiVersion: v2\n      name: testkms\n      endpoint: %s\n      timeout: 5s\n", p.Endpoint)
		}, "k8s:enc:kms:v2:testkms:"},
	} {
		for _, cached := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/watch-cache=%v", tc.name, cached), func(t *testing.T) {
				etcd, ec := startEtcd(t)
				path := writeEncryptionConfig(t, t.TempDir(), tc.providers(t)+"  - identity: {}\n")
				_, cs := startEncrypted(t, etcd.ClientURL(), path, cached)
				checkEncryptedSecrets(t, cs, ec, tc.prefix)
				if strings.HasPrefix(tc.prefix, "k8s:enc:kms:") { // the plugin's health is the server's, as upstream
					out, err := cs.CoreV1().RESTClient().Get().AbsPath("/readyz").Param("verbose", "").DoRaw(context.Background())
					if err != nil || !strings.Contains(string(out), "[+]kms-providers ok") {
						t.Errorf("/readyz?verbose: %v\n%s", err, out)
					}
				}
			})
		}
	}
}

// checkEncryptedSecrets runs TestEncryptionAtRest's checks on a server encrypting secrets
// with the provider whose values start with prefix.
func checkEncryptedSecrets(t *testing.T, cs kubernetes.Interface, ec *clientv3.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	secrets := cs.CoreV1().Secrets("default")
	w, err := secrets.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const plain = "plaintext-never-in-etcd"
	if _, err := secrets.Create(ctx, secretWith("s1", plain), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := rawGet(t, ec, "/registry/secrets/default/s1")
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		t.Fatalf("etcd value starts %.40q, want prefix %q", raw, prefix)
	}
	// Markers of at least 6 bytes: a shorter one turns up in random ciphertext now and then.
	for _, leak := range []string{plain, base64.StdEncoding.EncodeToString([]byte(plain)), "Opaque", "Secret"} {
		if bytes.Contains(raw[len(prefix):], []byte(leak)) {
			t.Errorf("etcd value holds %q in the clear", leak)
		}
	}
	if typ, s := nextSecretEvent(t, w); typ != watch.Added || string(s.Data["k"]) != plain {
		t.Errorf("watch: %s %q, want ADDED %q", typ, s.Data["k"], plain)
	}
	got, err := secrets.Get(ctx, "s1", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != plain {
		t.Fatalf("get: %v %q", err, got.Data)
	}
	for _, rv := range []string{"", "0"} {
		list, err := secrets.List(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil || len(list.Items) != 1 || string(list.Items[0].Data["k"]) != plain {
			t.Fatalf("list (resourceVersion %q): %v %+v", rv, err, list)
		}
	}
	got.Data["k"] = []byte("second")
	if _, err := secrets.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if typ, s := nextSecretEvent(t, w); typ != watch.Modified || string(s.Data["k"]) != "second" {
		t.Errorf("watch: %s %q, want MODIFIED second", typ, s.Data["k"])
	}
	if raw := rawGet(t, ec, "/registry/secrets/default/s1"); !bytes.HasPrefix(raw, []byte(prefix)) || bytes.Contains(raw, []byte("second")) {
		t.Errorf("updated value %.40q: want prefix %q and no plaintext", raw, prefix)
	}
	if err := secrets.Delete(ctx, "s1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if typ, s := nextSecretEvent(t, w); typ != watch.Deleted || string(s.Data["k"]) != "second" {
		t.Errorf("watch: %s %q, want DELETED with the last state", typ, s.Data["k"])
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Data: map[string]string{"k": "visible"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if raw := rawGet(t, ec, "/registry/configmaps/default/c1"); !bytes.HasPrefix(raw, []byte("k8s\x00")) {
		t.Errorf("a configmap (not in the configuration) is stored as %.20q, want plain protobuf", raw)
	}
}

// TestEncryptionMissingKey: a value encrypted with a key the configuration no longer has is
// a corrupt object, as kube-apiserver 1.37 answers it: a 500 InternalError naming its key on
// get, a 500 StorageReadError with a cause naming its etcd key on list (watch cache on and
// off), and the server keeps serving everything else.
func TestEncryptionMissingKey(t *testing.T) {
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch-cache=%v", cached), func(t *testing.T) {
			etcd := etcdtest.Start(t)
			ctx := context.Background()
			dir := t.TempDir()
			key1, key2 := newKey(t, 32), newKey(t, 32)
			s, cs := startEncrypted(t, etcd.ClientURL(), writeEncryptionConfig(t, dir, aesProvider("aescbc", "key1", key1)), cached)
			if _, err := cs.CoreV1().Secrets("default").Create(ctx, secretWith("s1", "v"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_ = s.Shutdown()
			_, cs = startEncrypted(t, etcd.ClientURL(), writeEncryptionConfig(t, dir, aesProvider("aescbc", "key2", key2)), cached)
			_, err := cs.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{})
			wantMissingKey(t, "get", err, metav1.StatusReasonInternalError, "Key: /secrets/default/s1,")
			for _, rv := range []string{"", "0"} {
				_, err = cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{ResourceVersion: rv})
				wantMissingKey(t, "list (resourceVersion "+rv+")", err, metav1.StatusReasonStoreReadError, "Key: /registry/secrets/default/s1,")
			}
			if _, err := cs.CoreV1().Secrets("default").Create(ctx, secretWith("s2", "v"), metav1.CreateOptions{}); err != nil {
				t.Errorf("create with key2: %v", err)
			}
			if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("configmaps after the failed reads: %v", err)
			}
		})
	}
}

// wantMissingKey checks err is a 500 of reason for a corrupt object that names key and the
// transformer's error.
func wantMissingKey(t *testing.T, what string, err error, reason metav1.StatusReason, key string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s of a value under a missing key: no error", what)
	case apierrors.ReasonForError(err) != reason || statusCode(err) != http.StatusInternalServerError:
		t.Errorf("%s: %v, want a 500 %s", what, err, reason)
	case !strings.Contains(err.Error(), "StorageError: corrupt object, Code: 7, "+key) ||
		!strings.Contains(err.Error(), "data from the storage is not transformable revision=0: "):
		t.Errorf("%s: %q does not name the corrupt object %s", what, err, key)
	}
}

// statusCode is the HTTP code of an API error.
func statusCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

// TestEncryptionKeyRotation follows upstream's key rotation on two apiservers sharing one
// etcd, restarting one at a time: add key2 second (reads of either key work everywhere),
// move key2 first (new writes use key2, key1's values still read), rewrite every Secret with
// `kubectl get secrets -A -o json | kubectl replace -f -` (each value is then under key2,
// unchanged objects included: they read as stale), and drop key1. After each restart every
// Secret is read, by get and list, through both apiservers.
func TestEncryptionKeyRotation(t *testing.T) {
	testenv.Kubectl(t)
	etcd, ec := startEtcd(t)
	ctx := context.Background()
	key1, key2 := newKey(t, 32), newKey(t, 32)
	steps := []struct {
		name      string
		providers string
		writes    string // the key name new values are written with
	}{
		{"key1 alone", aesProvider("aescbc", "key1", key1), "key1"},
		{"key2 added second", aesProvider("aescbc", "key1", key1, "key2", key2), "key1"},
		{"key2 first", aesProvider("aescbc", "key2", key2, "key1", key1), "key2"},
		{"key1 dropped", aesProvider("aescbc", "key2", key2), "key2"},
	}
	servers := make([]*server.Server, 2)
	clients := make([]kubernetes.Interface, 2)
	var names []string
	for i, step := range steps {
		path := writeEncryptionConfig(t, t.TempDir(), step.providers)
		for j := range servers { // a rolling restart
			if servers[j] != nil {
				_ = servers[j].Shutdown()
			}
			servers[j], clients[j] = startEncrypted(t, etcd.ClientURL(), path, true)
			for _, cs := range clients {
				if cs != nil {
					wantAllSecrets(t, cs, names)
				}
			}
		}
		name := fmt.Sprintf("s%d", i)
		if _, err := clients[i%2].CoreV1().Secrets("default").Create(ctx, secretWith(name, "data of "+name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create %s: %v", step.name, name, err)
		}
		names = append(names, name)
		if raw := rawGet(t, ec, "/registry/secrets/default/"+name); !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:"+step.writes+":")) {
			t.Fatalf("%s: new secret stored as %.30q, want it under %s", step.name, raw, step.writes)
		}
		if step.name == "key2 first" {
			rewriteSecrets(t, servers[0].KubeconfigPath())
			for _, n := range names {
				if raw := rawGet(t, ec, "/registry/secrets/default/"+n); !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:key2:")) {
					t.Errorf("after the rewrite %s is stored as %.30q, want it under key2", n, raw)
				}
			}
			wantAllSecrets(t, clients[1], names)
		}
	}
}

// wantAllSecrets reads every secret of names by get and by list.
func wantAllSecrets(t *testing.T, cs kubernetes.Interface, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		got, err := cs.CoreV1().Secrets("default").Get(ctx, n, metav1.GetOptions{})
		if err != nil || string(got.Data["k"]) != "data of "+n {
			t.Fatalf("get %s: %v %q", n, err, got.Data)
		}
	}
	list, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != len(names) {
		t.Fatalf("list: %v, %d items, want %d", err, len(list.Items), len(names))
	}
}

// rewriteSecrets runs upstream's rewrite step of a key rotation with kubectl.
func rewriteSecrets(t *testing.T, kubeconfig string) {
	t.Helper()
	k := newKubectlEnv(t, kubeconfig)
	cmd := k.cmd(context.Background(), "replace", "-f", "-")
	cmd.Stdin = strings.NewReader(k.ok("get", "secrets", "-A", "-o", "json"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl get | replace: %v\n%s", err, out)
	}
}
