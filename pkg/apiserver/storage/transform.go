package storage

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/value"
)

// Transformer changes a value on its way to etcd and back (encryption at rest). It is
// upstream's value.Transformer, so upstream's providers (aescbc, aesgcm, secretbox, KMS v2)
// plug in as they are and write what kube-apiserver writes. The etcd key of the value is its
// authenticated data, as upstream, so that a value moved to another key does not decrypt.
type Transformer = value.Transformer

// ErrCodeInternal is a value that could not be transformed for storing. The registry answers
// it with a 500.
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
		return nil, false, transformError(k, err)
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
	err = s.decode(plain, rev, into)
	if se := withCode(err, ErrCodeCorruptObj); se != nil && se.Key == "" {
		se.Key = string(k)
	}
	return err
}

// transformError is the error of a value at the full key k that its transformer could not
// read back: a corrupt object.
func transformError(k []byte, err error) error {
	return corruptError(string(k), true, 0, err)
}
