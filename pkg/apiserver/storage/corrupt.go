package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A stored value that cannot be read back (its transformer fails: an encryption key is
// gone; or its bytes do not decode) is a corrupt object, as upstream's
// AllowUnsafeMalformedObjectDeletion (on by default since Kubernetes 1.37) names it: a get
// answers ErrCodeCorruptObj, a list goes on past up to maxCorruptInList of them and answers
// CorruptListError, and DeleteCorrupt removes one without reading it.

// ErrCodeCorruptObj is a stored value that could not be transformed back or decoded.
const ErrCodeCorruptObj ErrCode = 101

// ErrCodeNotCorrupt is an unsafe deletion of an object that reads back fine.
const ErrCodeNotCorrupt ErrCode = 102

// maxCorruptInList is how many corrupt objects a list names before it stops, as upstream.
const maxCorruptInList = 100

// errTooManyCorrupt ends a list that met maxCorruptInList corrupt objects.
var errTooManyCorrupt = errors.New("too many errors, the list is truncated")

// corruptError is the error of a value at key (as the caller named it) that could not be
// read back: untransformable (rev 0, as upstream) or undecodable at rev.
func corruptError(key string, untransformable bool, rev int64, err error) *Error {
	what := "object not decodable"
	if untransformable {
		what, rev = "data from the storage is not transformable", 0
	}
	return &Error{Code: ErrCodeCorruptObj, Key: key, Msg: fmt.Sprintf("%s revision=%d: %v", what, rev, err)}
}

// storageErrorText is upstream's StorageError text for code (its number) at key.
func storageErrorText(code string, n int, key, msg string) string {
	return fmt.Sprintf("StorageError: %s, Code: %d, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: %s", code, n, key, msg)
}

// IsCorrupt reports a stored value that could not be read back.
func IsCorrupt(err error) bool { return hasCode(err, ErrCodeCorruptObj) }

// asCallerKey names a corrupt object's error by the key the caller gave (a get), not its
// full etcd key (a list), as upstream.
func asCallerKey(err error, key string) error {
	if se := withCode(err, ErrCodeCorruptObj); se != nil {
		return &Error{Code: se.Code, Key: "/" + strings.TrimPrefix(key, "/"), Msg: se.Msg}
	}
	return err
}

// CorruptListError is a list that met corrupt objects: each one's error (by its full etcd
// key), and why the list stopped early, if it did.
type CorruptListError struct {
	Errs  []*Error
	Abort error
}

func (e *CorruptListError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unable to transform or decode %d objects: {\n", len(e.Errs))
	for _, err := range e.Errs {
		fmt.Fprintf(&b, "\t%s\n", err.Error())
	}
	b.WriteString("}")
	if e.Abort != nil {
		fmt.Fprintf(&b, ", aborted: %v", e.Abort)
	}
	return b.String()
}

// TooMany reports a list that stopped at maxCorruptInList corrupt objects.
func (e *CorruptListError) TooMany() bool { return errors.Is(e.Abort, errTooManyCorrupt) }

// corruptList collects the corrupt objects a list meets.
type corruptList struct{ errs []*Error }

// add records err if it is a corrupt object's and reports whether the list goes on; any other
// error is returned.
func (c *corruptList) add(err error) (goOn bool, _ error) {
	se := withCode(err, ErrCodeCorruptObj)
	if se == nil {
		return false, err
	}
	c.errs = append(c.errs, se)
	if len(c.errs) >= maxCorruptInList {
		return false, &CorruptListError{Errs: c.errs, Abort: errTooManyCorrupt}
	}
	return true, nil
}

// err is the list's error once it is read: nil when nothing was corrupt.
func (c *corruptList) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return &CorruptListError{Errs: c.errs}
}

// CorruptDeleter is implemented by a store that can delete an object it cannot read back.
type CorruptDeleter interface {
	// DeleteCorrupt removes the value at key without decoding it, unconditionally (no
	// preconditions, no validation), provided it is corrupt at the latest revision: a value
	// that reads back fine is ErrCodeNotCorrupt, a missing one ErrCodeNotFound. dryRun
	// checks and does not delete.
	DeleteCorrupt(ctx context.Context, key string, dryRun bool) error
}

var _ CorruptDeleter = (*Etcd3)(nil)

// DeleteCorrupt is CorruptDeleter's: upstream's unsafe deletion
// (ignoreStoreReadErrorWithClusterBreakingPotential).
func (s *Etcd3) DeleteCorrupt(ctx context.Context, key string, dryRun bool) error {
	k := s.fullKey(key)
	for {
		kv, err := s.readKey(ctx, key, k)
		if err != nil {
			return err
		}
		if s.decodeKV(ctx, kv.Key, kv.Value, kv.ModRevision, s.cfg.NewFunc()) == nil {
			return &Error{Code: ErrCodeNotCorrupt, Key: k, Msg: storageErrorText("invalid object", 4, k,
				"unsafe deletion is not allowed because the object is decodable from storage")}
		}
		if dryRun {
			return nil
		}
		rev, err := s.deleteAt(ctx, key, k, kv.ModRevision)
		if err != nil || rev != 0 {
			return err
		}
	}
}

// readKey reads the full key k (key as the caller named it), NotFound when it is missing.
func (s *Etcd3) readKey(ctx context.Context, key, k string) (*mvccpb.KeyValue, error) {
	var resp *clientv3.GetResponse
	err := s.attempt(ctx, func(ctx context.Context, _ bool) (err error) {
		resp, err = s.kv.Get(ctx, k)
		return err
	})
	if err != nil {
		return nil, wrapEtcdErr(key, err)
	}
	s.saw(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return nil, &Error{Code: ErrCodeNotFound, Key: key}
	}
	return resp.Kvs[0], nil
}

// deleteAt deletes the full key k if its value is still the one of revision modRev and
// returns the deletion's revision, 0 when the value changed meanwhile.
func (s *Etcd3) deleteAt(ctx context.Context, key, k string, modRev int64) (rev int64, _ error) {
	err := s.write(ctx, key, func(ctx context.Context, retried bool) error {
		txn, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", modRev)).
			Then(clientv3.OpDelete(k)).Commit()
		switch {
		case err != nil:
			return err
		case txn.Succeeded:
			rev = txn.Header.Revision
			s.saw(rev)
		case retried:
			ev, err := s.firstChange(ctx, k, modRev, txn.Header.Revision)
			if err != nil {
				return err
			}
			if ev != nil && ev.Type == clientv3.EventTypeDelete {
				return errUnknownOutcome(key, fmt.Errorf("the object was deleted at revision %d, by this request or another", ev.Kv.ModRevision))
			}
		}
		return nil
	})
	return rev, err
}
