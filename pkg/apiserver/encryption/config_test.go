package encryption_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/testkms"
	"github.com/hacp/hacp/pkg/apiserver/encryption"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

// key returns a base64 key of n bytes (not random: the loader only checks its length).
func key(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }

const head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"

// TestParse: good files load (every provider, wildcards); bad ones are refused with the file,
// the line and the key of the problem, in upstream's words where upstream refuses them too.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []string // substrings of the error; none: the file is good
	}{
		{"every provider", head + `resources:
- resources: [secrets, configmaps, widgets.example.com]
  providers:
  - aescbc: {keys: [{name: k1, secret: ` + key(32) + `}, {name: k2, secret: ` + key(16) + `}]}
  - aesgcm: {keys: [{name: k1, secret: ` + key(24) + `}]}
  - secretbox: {keys: [{name: k1, secret: ` + key(32) + `}]}
  - kms: {apiVersion: v2, name: vault, endpoint: unix:///run/kms.sock, timeout: 3s}
  - identity: {}
`, nil},
		{"wildcards", head + `resources:
- resources: [events]
  providers: [{identity: {}}]
- resources: ['*.apps', '*.']
  providers: [{aescbc: {keys: [{name: k1, secret: ` + key(32) + `}]}}]
- resources: ['*.*']
  providers: [{secretbox: {keys: [{name: k1, secret: ` + key(32) + `}]}}]
`, nil},
		{"unknown field", head + "resources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n    aescbd: {}\n", []string{"f.yaml:7: aescbd: unknown field"}},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", []string{"f.yaml:2:", "want kind EncryptionConfiguration"}},
		{"not yaml", head + "resources: [\n", []string{"f.yaml:"}},
		{"no resources", head + "resources: []\n", []string{"resources: Required value"}},
		{"aescbc key length", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: k1\n        secret: " + key(20) + "\n",
			[]string{"f.yaml:9: resources[0].providers[0].aescbc.keys[0].secret", "got 20, expected one of [16 24 32]"}},
		{"secretbox key length", head + "resources:\n- resources: [secrets]\n  providers:\n  - secretbox: {keys: [{name: k1, secret: " + key(16) + "}]}\n",
			[]string{"secretbox.keys[0].secret", "got 16, expected one of [32]"}},
		{"key not base64", head + "resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k1, secret: '***'}]}\n", []string{"secrets must be base64 encoded"}},
		{"key names repeat", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: k1, secret: " + key(32) + "}, {name: k1, secret: " + key(32) + "}]}\n",
			[]string{"keys[1].name", "duplicate key name k1"}},
		{"key without a name", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{secret: " + key(32) + "}]}\n", []string{"keys[0].name: Required value"}},
		{"two providers in one item", head + "resources:\n- resources: [secrets]\n  providers:\n  - {identity: {}, aescbc: {keys: [{name: k1, secret: " + key(32) + "}]}}\n",
			[]string{"more than one provider specified in a single element"}},
		{"empty provider", head + "resources:\n- resources: [secrets]\n  providers:\n  - {}\n", []string{"provider does not contain any of the expected providers"}},
		{"no providers", head + "resources:\n- resources: [secrets]\n", []string{"resources[0].providers: Required value"}},
		{"capital letters", head + "resources:\n- resources: [Secrets]\n  providers: [{identity: {}}]\n", []string{"resource name should not contain capital letters"}},
		{"star", head + "resources:\n- resources: ['*']\n  providers: [{identity: {}}]\n", []string{"use '*.' to encrypt all the resources from core API group"}},
		{"across groups", head + "resources:\n- resources: ['secrets.*']\n  providers: [{identity: {}}]\n", []string{"encrypting the same resource across groups is not supported"}},
		{"events.k8s.io", head + "resources:\n- resources: [events.events.k8s.io]\n  providers: [{identity: {}}]\n", []string{"Use 'events' instead"}},
		{"no REST API", head + "resources:\n- resources: [serviceipallocations]\n  providers: [{identity: {}}]\n", []string{"resources which do not have REST API/s cannot be encrypted"}},
		{"overlap in one list", head + "resources:\n- resources: [secrets, '*.']\n  providers: [{identity: {}}]\n", []string{"using overlapping resources"}},
		{"duplicate in one list", head + "resources:\n- resources: [secrets, secrets]\n  providers: [{identity: {}}]\n", []string{"the same resource cannot be specified multiple times"}},
		{"masked by an earlier wildcard", head + "resources:\n- resources: ['*.*']\n  providers: [{identity: {}}]\n- resources: [secrets]\n  providers: [{identity: {}}]\n",
			[]string{`f.yaml:6: resources[1].resources[0]`, `resource "secrets" is masked by earlier rule "*.*"`}},
		{"kms v1", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: old, endpoint: unix:///x}\n", []string{"kms.apiVersion", "hacp supports KMS v2 only"}},
		{"kms name", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: 'a:b', endpoint: unix:///x}\n", []string{"must not contain ':'"}},
		{"kms names repeat", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: a, endpoint: unix:///x}\n  - kms: {apiVersion: v2, name: a, endpoint: unix:///y}\n",
			[]string{"duplicate KMS provider name a"}},
		{"kms endpoint", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: a, endpoint: 'tcp://127.0.0.1:1'}\n", []string{`unsupported scheme "tcp" for KMS provider`}},
		{"kms timeout", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: a, endpoint: unix:///x, timeout: 0s}\n", []string{"timeout should be a positive value"}},
		{"kms v2 cachesize", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: a, endpoint: unix:///x, cachesize: 10}\n", []string{"cachesize is not supported in v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := encryption.Parse("f.yaml", []byte(tc.body))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused a good file: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted a bad file")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestLoadMissingFile: an unreadable file is an error naming it.
func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := encryption.Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a missing file: %v", err)
	}
}

// build loads body and builds its transformers.
func build(t *testing.T, body string) *encryption.Transformers {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := encryption.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := encryption.Build(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// TestFor: a resource takes its own entry's providers, else its group's wildcard, else
// "*.*"'s, else none; the first provider and key write, with their prefix.
func TestFor(t *testing.T) {
	tr := build(t, head+`resources:
- resources: [secrets]
  providers: [{aescbc: {keys: [{name: s, secret: `+key(32)+`}]}}]
- resources: ['*.apps']
  providers: [{aesgcm: {keys: [{name: a, secret: `+key(32)+`}]}}]
- resources: ['*.']
  providers: [{secretbox: {keys: [{name: core, secret: `+key(32)+`}]}}]
- resources: [widgets.example.com]
  providers: [{identity: {}}]
`)
	for _, tc := range []struct {
		gr     schema.GroupResource
		prefix string // "": no transformer
	}{
		{schema.GroupResource{Resource: "secrets"}, "k8s:enc:aescbc:v1:s:"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "k8s:enc:aesgcm:v1:a:"},
		{schema.GroupResource{Resource: "configmaps"}, "k8s:enc:secretbox:v1:core:"},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, "identity"},
		{schema.GroupResource{Group: "batch", Resource: "jobs"}, ""},
	} {
		t.Run(tc.gr.String(), func(t *testing.T) {
			x := tr.For(tc.gr)
			if tc.prefix == "" {
				if x != nil {
					t.Fatal("a transformer for a resource the configuration does not name")
				}
				return
			}
			ctx := value.DefaultContext("/registry/x")
			out, err := x.TransformToStorage(context.Background(), []byte("plain"), ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prefix == "identity" {
				if string(out) != "plain" {
					t.Fatalf("identity wrote %q", out)
				}
				return
			}
			if !bytes.HasPrefix(out, []byte(tc.prefix)) || bytes.Contains(out, []byte("plain")) {
				t.Fatalf("wrote %q, want prefix %s and no plaintext", out, tc.prefix)
			}
			back, stale, err := x.TransformFromStorage(context.Background(), out, ctx)
			if err != nil || stale || string(back) != "plain" {
				t.Fatalf("read back %q stale=%v: %v", back, stale, err)
			}
			// AES-GCM authenticates the etcd key with the value (CBC and secretbox do not).
			if _, _, err := x.TransformFromStorage(context.Background(), out, value.DefaultContext("/registry/other")); err == nil && tc.gr.Group == "apps" {
				t.Fatal("an aesgcm value moved to another key decrypted (the key is its authenticated data)")
			}
		})
	}
}

// TestRotationOrder: with key2 listed after key1 both read and key1 writes; values read by a
// provider or key that is not the first are stale (to be rewritten).
func TestRotationOrder(t *testing.T) {
	k1, k2 := key(32), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	old := build(t, head+"resources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: key1, secret: "+k1+"}, {name: key2, secret: "+k2+"}]}}]\n")
	rotated := build(t, head+"resources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: key2, secret: "+k2+"}, {name: key1, secret: "+k1+"}]}}]\n")
	secrets := schema.GroupResource{Resource: "secrets"}
	ctx, dctx := context.Background(), value.DefaultContext("/registry/secrets/ns/n")
	v1, err := old.For(secrets).TransformToStorage(ctx, []byte("x"), dctx)
	if err != nil || !bytes.HasPrefix(v1, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("old config wrote %q: %v", v1, err)
	}
	if _, stale, err := rotated.For(secrets).TransformFromStorage(ctx, v1, dctx); err != nil || !stale {
		t.Fatalf("key1's value under the rotated config: stale=%v err=%v, want stale", stale, err)
	}
	v2, _ := rotated.For(secrets).TransformToStorage(ctx, []byte("x"), dctx)
	if !bytes.HasPrefix(v2, []byte("k8s:enc:aescbc:v1:key2:")) {
		t.Fatalf("rotated config wrote %q", v2)
	}
	if out, _, err := old.For(secrets).TransformFromStorage(ctx, v2, dctx); err != nil || string(out) != "x" {
		t.Fatalf("key2's value under the old config (key2 second): %q %v", out, err)
	}
}

// TestKMSv2: a KMS v2 provider writes k8s:enc:kms:v2:<name>: values through the plugin, and
// reads them back after the plugin's key ID changed.
func TestKMSv2(t *testing.T) {
	p := testkms.Start(t, "kek-1")
	tr := build(t, head+"resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: test, endpoint: "+p.Endpoint+", timeout: 5s}\n")
	x := tr.For(schema.GroupResource{Resource: "secrets"})
	ctx, dctx := context.Background(), value.DefaultContext("/registry/secrets/ns/n")
	out, err := x.TransformToStorage(ctx, []byte("plain"), dctx)
	if err != nil || !bytes.HasPrefix(out, []byte("k8s:enc:kms:v2:test:")) || bytes.Contains(out, []byte("plain")) {
		t.Fatalf("wrote %q: %v", out, err)
	}
	if p.Calls("Encrypt") == 0 {
		t.Fatal("the plugin never encrypted a data key")
	}
	back, _, err := x.TransformFromStorage(ctx, out, dctx)
	if err != nil || string(back) != "plain" {
		t.Fatalf("read back %q: %v", back, err)
	}
}

// TestKMSv2PluginDown: a KMS v2 plugin that does not answer at start does not stop the
// apiserver (kube-apiserver waits for it too), but its health check fails and writes of its
// resources fail with an error naming it, until it answers.
func TestKMSv2PluginDown(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	tr := build(t, head+"resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: absent, endpoint: unix://"+sock+", timeout: 200ms}\n")
	if !tr.HasKMS() || tr.KMSHealthy() == nil {
		t.Fatalf("HasKMS %v, KMSHealthy %v: want a failing check", tr.HasKMS(), tr.KMSHealthy())
	}
	_, err := tr.For(schema.GroupResource{Resource: "secrets"}).TransformToStorage(context.Background(), []byte("x"), value.DefaultContext("/k"))
	if err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("write without the plugin: %v, want an error naming it", err)
	}
}
