package encryption

import (
	"context"
	"crypto/aes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
)

// The value prefixes of upstream's providers: an encrypted value is the prefix, the key's
// name (or the KMS plugin's) and ':', then the provider's ciphertext.
const (
	PrefixAESCBC    = "k8s:enc:aescbc:v1:"
	PrefixAESGCM    = "k8s:enc:aesgcm:v1:"
	PrefixSecretbox = "k8s:enc:secretbox:v1:"
	PrefixKMSv2     = "k8s:enc:kms:v2:"
)

// errNoMatchingPrefix is upstream's error for a value no provider of its resource reads.
var errNoMatchingPrefix = errors.New("no matching prefix found")

// Transformers are the value transformers of an EncryptionConfiguration, by resource.
type Transformers struct {
	byGR map[schema.GroupResource]value.Transformer
	kms  []*kmsProvider
}

// Build makes the transformers of c (as Load returns it). KMS v2 plugins are dialled and
// asked for their status once; a plugin that is not up yet is asked again in the
// background (as kube-apiserver does), until ctx ends. Close stops that.
func Build(ctx context.Context, c *apiserverv1.EncryptionConfiguration, log *slog.Logger) (*Transformers, error) {
	if log == nil {
		log = slog.Default()
	}
	t := &Transformers{byGR: map[schema.GroupResource]value.Transformer{}}
	lists := map[schema.GroupResource][]value.PrefixTransformer{}
	var order []schema.GroupResource
	for i, rc := range c.Resources {
		providers, err := t.providers(ctx, rc, log)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("encryption: resources[%d]: %w", i, err)
		}
		for _, res := range rc.Resources {
			gr := schema.ParseGroupResource(res)
			if _, ok := lists[gr]; !ok {
				order = append(order, gr)
			}
			lists[gr] = append(lists[gr], providers...)
		}
	}
	for _, gr := range order {
		t.byGR[gr] = value.NewPrefixTransformers(errNoMatchingPrefix, lists[gr]...)
	}
	return t, nil
}

// For returns the transformer of gr's values: its own entry's, else its group's "*.group"
// (core: "*."), else "*.*"'s; nil when none applies (values are stored as encoded).
func (t *Transformers) For(gr schema.GroupResource) value.Transformer {
	if t == nil {
		return nil
	}
	for _, k := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, anyGroupResource} {
		if tr, ok := t.byGR[k]; ok {
			return tr
		}
	}
	return nil
}

// HasKMS reports whether a KMS plugin is configured.
func (t *Transformers) HasKMS() bool { return t != nil && len(t.kms) > 0 }

// KMSHealthy returns the errors of the KMS plugins' last status checks (made every minute,
// every 10s after a failure), nil when every plugin answered well.
func (t *Transformers) KMSHealthy() error {
	var errs []error
	for _, k := range t.kms {
		errs = append(errs, k.healthy())
	}
	return errors.Join(errs...)
}

// Close stops the KMS plugins' status checks and closes their connections.
func (t *Transformers) Close() {
	if t == nil {
		return
	}
	for _, k := range t.kms {
		k.close()
	}
}

// providers builds one entry's providers, in order (the first writes).
func (t *Transformers) providers(ctx context.Context, rc apiserverv1.ResourceConfiguration, log *slog.Logger) ([]value.PrefixTransformer, error) {
	var out []value.PrefixTransformer
	for j, p := range rc.Providers {
		var (
			pt  value.PrefixTransformer
			err error
		)
		switch {
		case p.AESCBC != nil:
			pt, err = keyedProvider(PrefixAESCBC, p.AESCBC.Keys, func(key []byte) (value.Transformer, error) {
				block, err := aes.NewCipher(key)
				if err != nil {
					return nil, err
				}
				return aestransformer.NewCBCTransformer(block), nil
			})
		case p.AESGCM != nil:
			pt, err = keyedProvider(PrefixAESGCM, p.AESGCM.Keys, func(key []byte) (value.Transformer, error) {
				block, err := aes.NewCipher(key)
				if err != nil {
					return nil, err
				}
				return aestransformer.NewGCMTransformer(block)
			})
		case p.Secretbox != nil:
			pt, err = keyedProvider(PrefixSecretbox, p.Secretbox.Keys, func(key []byte) (value.Transformer, error) {
				if len(key) != 32 {
					return nil, fmt.Errorf("expected key size 32 for secretbox provider, got %d", len(key))
				}
				return secretbox.NewSecretboxTransformer([32]byte(key)), nil
			})
		case p.Identity != nil:
			pt = value.PrefixTransformer{Transformer: identity.NewEncryptCheckTransformer(), Prefix: []byte{}}
		case p.KMS != nil:
			var k *kmsProvider
			k, err = newKMSProvider(ctx, p.KMS, log)
			if err == nil {
				t.kms = append(t.kms, k)
				pt = k.prefixTransformer()
			}
		default:
			err = errors.New(noProviderErr)
		}
		if err != nil {
			return nil, fmt.Errorf("providers[%d]: %w", j, err)
		}
		out = append(out, pt)
	}
	return out, nil
}

// keyedProvider builds a provider with named keys: the first key writes, every key reads
// the values that name it.
func keyedProvider(prefix string, keys []apiserverv1.Key, newTransformer func(key []byte) (value.Transformer, error)) (value.PrefixTransformer, error) {
	var perKey []value.PrefixTransformer
	for _, k := range keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("key %s: %w", k.Name, err)
		}
		tr, err := newTransformer(secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("key %s: %w", k.Name, err)
		}
		perKey = append(perKey, value.PrefixTransformer{Transformer: tr, Prefix: []byte(k.Name + ":")})
	}
	return value.PrefixTransformer{
		Transformer: value.NewPrefixTransformers(fmt.Errorf("no matching key was found for the provided %s transformer", providerName(prefix)), perKey...),
		Prefix:      []byte(prefix),
	}, nil
}

// providerName is upstream's name of a provider in its errors ("AES", "Secretbox").
func providerName(prefix string) string {
	if prefix == PrefixSecretbox {
		return "Secretbox"
	}
	return "AES"
}
