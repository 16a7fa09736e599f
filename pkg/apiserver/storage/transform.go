package storage

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/value"
)

// Transformer changes a value on its way to etcd and back (encryption at rest). It is
// upstream's value.Transformer, so upstream's providers (aescbc, aesgcm, secretbox, KMS v2)
// plug in as they are and write what kube-apiserver writes. The etcd key of the value is its
// authenticated data, as upstream, so that a value moved to another key does not decrypt.
type Transformer = value.Transformer

// ErrCodeInternal is a stored value that could not be read back: its transformer failed
// (a key is missing, or the value was tampered with). The registry answers it with a 500.
const ErrCodeInternal ErrCode = 100

// fromStorage returns the stored value at the full etcd key k as the codec reads it. stale
// says the value was written by a provider or key other than the first, so that the next
// update rewrites it even when the object did not change.
func (s *Etcd3) fromStorage(ctx context.Context, k []byte, data []byte) (plain []byte, stale bool, err error) {
	if s.cfg.Transformer == nil {
		return data, false, nil
	}
	plain, stale, err = s.cfg.Transformer.TransformFromStorage(ctx, data, value.DefaultContext(k))
	if err != nil {
		return nil, false, transformError(k, data, err)
	}
	return plain, stale, nil
}

// toStorage returns what to write to etcd at the full key k for the encoded object data.
func (s *Etcd3) toStorage(ctx context.Context, k string, data []byte) ([]byte, error) {
	if s.cfg.Transformer == nil {
		return data, nil
	}
	out, err := s.cfg.Transformer.TransformToStorage(ctx, data, value.DefaultContext(k))
	if err != nil {
		return nil, &Error{Code: ErrCodeInternal, Key: k, Msg: fmt.Sprintf("unable to transform key %q: %v", k, err)}
	}
	return out, nil
}

// decodeKV decodes a value as read from etcd at the full key k: transformed back, then decoded.
func (s *Etcd3) decodeKV(ctx context.Context, k, data []byte, rev int64, into runtime.Object) error {
	plain, _, err := s.fromStorage(ctx, k, data)
	if err != nil {
		return err
	}
	return s.decode(plain, rev, into)
}

// transformError names the key and the value's prefix (provider and key name, e.g.
// "k8s:enc:aescbc:v1:key1:") in the error of a failed read, so that the missing key is
// plain from the message.
func transformError(k, data []byte, err error) error {
	msg := fmt.Sprintf("unable to transform key %q: %v", k, err)
	if p := valuePrefix(data); p != "" {
		msg += fmt.Sprintf(" (the value is stored with prefix %s, which no configured provider and key reads)", strconv.Quote(p))
	}
	return &Error{Code: ErrCodeInternal, Key: string(k), Msg: msg}
}

// valuePrefix returns the "k8s:enc:<provider>:<version>:<key or plugin name>:" prefix of an
// encrypted value, or "" for a value without one.
func valuePrefix(data []byte) string {
	const enc = "k8s:enc:"
	if !bytes.HasPrefix(data, []byte(enc)) {
		return ""
	}
	colons := 0
	for i, b := range data[:min(len(data), 128)] {
		if b < 0x20 || b > 0x7e {
			return ""
		}
		if b == ':' {
			if colons++; colons == 5 {
				return string(data[:i+1])
			}
		}
	}
	return ""
}
