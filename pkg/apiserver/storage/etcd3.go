package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Config configures one etcd3 store. One store serves one resource.
type Config struct {
	Prefix           string                // prepended to every key, e.g. "/registry"
	Codec            Codec                 // JSONCodec if nil
	NewFunc          func() runtime.Object // a new empty object
	BookmarkInterval time.Duration         // watch bookmarks, when asked for (default 15s)
	// AttemptTimeout bounds one etcd request of a write (its reads and its transaction). An
	// attempt that runs out, or fails because etcd's leader changed, is tried again until the
	// caller's context ends. A proposal forwarded to a leader that just died is lost, and etcd
	// itself would only give up on it after seconds; set this to about the cluster's election
	// timeout. Retried writes stay exactly-once: see Create. Zero: one attempt, no bound.
	AttemptTimeout time.Duration
}

// Etcd3 implements Interface on an etcd v3 client.
type Etcd3 struct {
	client *clientv3.Client
	cfg    Config
}

// New returns an etcd3-backed store.
func New(client *clientv3.Client, cfg Config) *Etcd3 {
	if cfg.Codec == nil {
		cfg.Codec = JSONCodec{}
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = 15 * time.Second
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	return &Etcd3{client: client, cfg: cfg}
}

func (s *Etcd3) fullKey(key string) string {
	return s.cfg.Prefix + "/" + strings.TrimPrefix(key, "/")
}

func (s *Etcd3) decode(data []byte, rev int64, into runtime.Object) error {
	if err := s.cfg.Codec.Decode(data, into); err != nil {
		return &Error{Code: ErrCodeInvalidObj, Msg: fmt.Sprintf("decode stored object: %v", err)}
	}
	return setRV(into, rev)
}

func setRV(obj runtime.Object, rev int64) error {
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if rev == 0 {
		a.SetResourceVersion("")
	} else {
		a.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
	return nil
}

// encode stores obj without its resourceVersion (the revision is the truth).
func (s *Etcd3) encode(obj runtime.Object) ([]byte, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := a.GetResourceVersion()
	a.SetResourceVersion("")
	defer a.SetResourceVersion(rv)
	return s.cfg.Codec.Encode(obj)
}

func wrapEtcdErr(key string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, rpctypes.ErrCompacted) {
		return &Error{Code: ErrCodeExpired, Key: key, Msg: err.Error()}
	}
	if errors.Is(err, rpctypes.ErrFutureRev) {
		return &Error{Code: ErrCodeTooLargeRV, Key: key, Msg: err.Error()}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return &Error{Code: ErrCodeTimeout, Key: key, Msg: "the request did not complete in time: " + err.Error()}
	}
	return &Error{Code: ErrCodeUnreachable, Key: key, Msg: fmt.Sprintf("etcd: %v", err)}
}

// Revision returns the current revision by a linearizable read.
func (s *Etcd3) Revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.cfg.Prefix+"/\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, wrapEtcdErr("", err)
	}
	return resp.Header.Revision, nil
}

// retryable reports whether a failed etcd attempt may be tried again: it ran out of its own
// time (not the caller's), or etcd lost or changed its leader meanwhile.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), status.Code(err) == codes.DeadlineExceeded,
		errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), status.Code(err) == codes.Unavailable:
		return true
	}
	return false
}

// attempt runs op, bounded by AttemptTimeout, again after each retryable failure until ctx
// ends. retried tells op whether an earlier attempt may have been applied after all.
func (s *Etcd3) attempt(ctx context.Context, op func(ctx context.Context, retried bool) error) error {
	if s.cfg.AttemptTimeout <= 0 {
		return op(ctx, false)
	}
	for retried := false; ; retried = true {
		actx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
		err := op(actx, retried)
		cancel()
		if err == nil || !retryable(ctx, err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Create writes obj at key if nothing is there. When an attempt is retried (see
// AttemptTimeout), an earlier one may have been applied meanwhile: the retry then finds the
// very bytes it writes (they hold the object's uid and creation time) and reports success
// with them rather than AlreadyExists, so a create happens once and is acknowledged once.
func (s *Etcd3) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if a.GetResourceVersion() != "" {
		return &Error{Code: ErrCodeInvalidObj, Key: key, Msg: "resourceVersion should not be set on objects to be created"}
	}
	data, err := s.encode(obj)
	if err != nil {
		return err
	}
	var rev int64
	err = s.attempt(ctx, func(ctx context.Context, retried bool) (err error) {
		rev, err = s.createOnce(ctx, key, data, retried)
		return err
	})
	if err != nil {
		return wrapEtcdErr(key, err)
	}
	if out != nil {
		return s.into(obj, data, rev, out)
	}
	return nil
}

// createOnce is one attempt of Create; it returns the revision of the object at key.
func (s *Etcd3) createOnce(ctx context.Context, key string, data []byte, retried bool) (int64, error) {
	k := s.fullKey(key)
	resp, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(data))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if kv := elseKV(resp); retried && kv != nil && string(kv.Value) == string(data) {
		return kv.ModRevision, nil // our own earlier attempt
	}
	return 0, &Error{Code: ErrCodeExists, Key: key}
}

// elseKV returns the key-value of a transaction's OpGet Else branch, or nil.
func elseKV(resp *clientv3.TxnResponse) *mvccpb.KeyValue {
	if len(resp.Responses) == 0 {
		return nil
	}
	r := resp.Responses[0].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return nil
	}
	return r.Kvs[0]
}

// into gives out the state just written: obj itself when the types match (saving a decode),
// otherwise the decoded bytes. out takes over obj's contents (a shallow copy): the object
// given to a write belongs to the store from then on, as in upstream's storage interface.
func (s *Etcd3) into(obj runtime.Object, data []byte, rev int64, out runtime.Object) error {
	ov, iv := reflect.ValueOf(out), reflect.ValueOf(obj)
	if ov.Type() == iv.Type() && ov.Kind() == reflect.Pointer && out != obj {
		ov.Elem().Set(iv.Elem())
		return setRV(out, rev)
	}
	if out == obj {
		return setRV(out, rev)
	}
	return s.decode(data, rev, out)
}

func (s *Etcd3) Get(ctx context.Context, key string, opts GetOptions, out runtime.Object) error {
	var ops []clientv3.OpOption
	minRV, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	if opts.ResourceVersion == "0" {
		ops = append(ops, clientv3.WithSerializable())
	}
	resp, err := s.client.Get(ctx, s.fullKey(key), ops...)
	if err != nil {
		return wrapEtcdErr(key, err)
	}
	if minRV > resp.Header.Revision {
		return &Error{Code: ErrCodeTooLargeRV, Key: key, RV: minRV}
	}
	if len(resp.Kvs) == 0 {
		if opts.IgnoreNotFound {
			resetObject(out)
			return nil
		}
		return &Error{Code: ErrCodeNotFound, Key: key}
	}
	return s.decode(resp.Kvs[0].Value, resp.Kvs[0].ModRevision, out)
}

// continueToken is the upstream-compatible continue token.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(startKey, keyPrefix string, rev int64) (string, error) {
	b, err := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: strings.TrimPrefix(startKey, keyPrefix)})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeContinue(token, keyPrefix string) (fromKey string, rev int64, err error) {
	bad := &Error{Code: ErrCodeInvalidRV, Msg: "continue key is not valid: the token is malformed"}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, bad
	}
	var c continueToken
	if err := json.Unmarshal(b, &c); err != nil || c.APIVersion != "meta.k8s.io/v1" || c.ResourceVersion == 0 {
		return "", 0, bad
	}
	// Refuse keys that climb out of the prefix.
	cleaned := path.Clean("/" + c.StartKey)
	if c.StartKey == "" || strings.Contains(c.StartKey, "..") || cleaned == "/" {
		return "", 0, bad
	}
	return keyPrefix + c.StartKey, c.ResourceVersion, nil
}

func (s *Etcd3) GetList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) error {
	list, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	keyPrefix := s.fullKey(key)
	if opts.Recursive && !strings.HasSuffix(keyPrefix, "/") {
		keyPrefix += "/"
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	var (
		fromKey  = keyPrefix
		withRev  int64
		serial   bool
		checkMin int64
	)
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return &Error{Code: ErrCodeInvalidRV, Msg: "specifying resource version is not allowed when using continue"}
		}
		fromKey, withRev, err = decodeContinue(opts.Continue, keyPrefix)
		if err != nil {
			return err
		}
	case opts.ResourceVersionMatch == "Exact":
		if rv == 0 {
			return &Error{Code: ErrCodeInvalidRV, Msg: "resourceVersionMatch=Exact requires a non-zero resourceVersion"}
		}
		withRev = rv
	case opts.ResourceVersion == "0":
		serial = true
	default:
		checkMin = rv
	}

	var ops []clientv3.OpOption
	if serial {
		ops = append(ops, clientv3.WithSerializable())
	}
	rangeEnd := clientv3.GetPrefixRangeEnd(keyPrefix)
	if !opts.Recursive {
		rangeEnd = ""
		fromKey = keyPrefix
	}
	limit := opts.Limit
	if !opts.Recursive {
		limit = 0
	}
	batch := limit
	if batch > 0 && !opts.Predicate.Empty() {
		// Filtering discards some items: read a little more per round trip.
		batch = max(batch, 100)
	}

	newItem := s.cfg.NewFunc
	var items []runtime.Object
	var readRev int64 = withRev
	var more bool
	var lastKey []byte
	for {
		o := append([]clientv3.OpOption{}, ops...)
		if rangeEnd != "" {
			o = append(o, clientv3.WithRange(rangeEnd))
		}
		if batch > 0 {
			o = append(o, clientv3.WithLimit(batch))
		}
		if readRev > 0 {
			o = append(o, clientv3.WithRev(readRev))
		}
		resp, err := s.client.Get(ctx, fromKey, o...)
		if err != nil {
			err = wrapEtcdErr(key, err)
			if IsExpired(err) && opts.Continue != "" {
				return &Error{Code: ErrCodeExpired, Key: key, RV: withRev, Msg: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."}
			}
			if IsExpired(err) {
				return &Error{Code: ErrCodeExpired, Key: key, RV: withRev, Msg: fmt.Sprintf("too old resource version: %d", withRev)}
			}
			return err
		}
		if readRev == 0 {
			readRev = resp.Header.Revision
			if checkMin > readRev {
				return &Error{Code: ErrCodeTooLargeRV, Key: key, RV: checkMin, Msg: fmt.Sprintf("Too large resource version: %d, current: %d", checkMin, readRev)}
			}
		}
		for _, kv := range resp.Kvs {
			lastKey = kv.Key
			if limit > 0 && int64(len(items)) >= limit {
				more = true
				break
			}
			obj := newItem()
			if err := s.decode(kv.Value, kv.ModRevision, obj); err != nil {
				return err
			}
			ok, err := opts.Predicate.Matches(obj)
			if err != nil {
				return err
			}
			if ok {
				items = append(items, obj)
			}
		}
		if more {
			// lastKey is the first item we did not return.
			lastKey = lastKey[:len(lastKey):len(lastKey)]
			break
		}
		if !resp.More || batch == 0 {
			break
		}
		if limit > 0 && int64(len(items)) >= limit {
			// Exactly full: there is more in etcd.
			more = true
			lastKey = append(lastKey, 0)
			break
		}
		fromKey = string(lastKey) + "\x00"
	}
	if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	list.SetResourceVersion(strconv.FormatInt(readRev, 10))
	list.SetContinue("")
	list.SetRemainingItemCount(nil)
	if more {
		next, err := encodeContinue(string(lastKey), keyPrefix, readRev)
		if err != nil {
			return err
		}
		list.SetContinue(next)
		if opts.Predicate.Empty() {
			// Count what is left from the first unreturned key.
			resp, err := s.client.Get(ctx, string(lastKey), clientv3.WithRange(rangeEnd), clientv3.WithRev(readRev), clientv3.WithCountOnly())
			if err == nil {
				n := resp.Count
				list.SetRemainingItemCount(&n)
			}
		}
	}
	return nil
}

func (s *Etcd3) GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool, precond *Preconditions, tryUpdate UpdateFunc) error {
	k := s.fullKey(key)
	for {
		var resp *clientv3.GetResponse
		err := s.attempt(ctx, func(ctx context.Context, _ bool) (err error) {
			resp, err = s.client.Get(ctx, k)
			return err
		})
		if err != nil {
			return wrapEtcdErr(key, err)
		}
		current := s.cfg.NewFunc()
		var modRev int64
		if len(resp.Kvs) == 0 {
			if !ignoreNotFound {
				return &Error{Code: ErrCodeNotFound, Key: key}
			}
		} else {
			modRev = resp.Kvs[0].ModRevision
			if err := s.decode(resp.Kvs[0].Value, modRev, current); err != nil {
				return err
			}
		}
		if modRev != 0 {
			if err := precond.check(key, current); err != nil {
				return err
			}
		}
		updated, err := tryUpdate(current)
		if err != nil {
			return err
		}
		data, err := s.encode(updated)
		if err != nil {
			return err
		}
		if modRev != 0 && string(data) == string(resp.Kvs[0].Value) {
			// No change: no write, same resourceVersion, as upstream.
			return s.decode(data, modRev, out)
		}
		var rev int64
		err = s.attempt(ctx, func(ctx context.Context, retried bool) error {
			txn, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", modRev)).
				Then(clientv3.OpPut(k, string(data))).Else(clientv3.OpGet(k)).Commit()
			switch {
			case err != nil:
				return err
			case txn.Succeeded:
				rev = txn.Header.Revision
			case retried && elseKV(txn) != nil && string(elseKV(txn).Value) == string(data):
				rev = elseKV(txn).ModRevision // our own earlier attempt was applied
			}
			return nil
		})
		if err != nil {
			return wrapEtcdErr(key, err)
		}
		if rev == 0 {
			continue // someone else wrote in between: retry on the fresh object
		}
		return s.into(updated, data, rev, out)
	}
}

func (s *Etcd3) Delete(ctx context.Context, key string, out runtime.Object, precond *Preconditions, validate ValidateFunc) error {
	k := s.fullKey(key)
	for {
		var resp *clientv3.GetResponse
		err := s.attempt(ctx, func(ctx context.Context, _ bool) (err error) {
			resp, err = s.client.Get(ctx, k)
			return err
		})
		if err != nil {
			return wrapEtcdErr(key, err)
		}
		if len(resp.Kvs) == 0 {
			return &Error{Code: ErrCodeNotFound, Key: key}
		}
		kv := resp.Kvs[0]
		current := s.cfg.NewFunc()
		if err := s.decode(kv.Value, kv.ModRevision, current); err != nil {
			return err
		}
		if err := precond.check(key, current); err != nil {
			return err
		}
		if validate != nil {
			if err := validate(ctx, current); err != nil {
				return err
			}
		}
		deleted := false
		err = s.attempt(ctx, func(ctx context.Context, retried bool) error {
			txn, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).
				Then(clientv3.OpDelete(k)).Else(clientv3.OpGet(k)).Commit()
			if err != nil {
				return err
			}
			// On a retry, a key that is gone was deleted by our earlier attempt (or by
			// someone else after it: either way this delete is done).
			deleted = txn.Succeeded || (retried && elseKV(txn) == nil)
			return nil
		})
		if err != nil {
			return wrapEtcdErr(key, err)
		}
		if !deleted {
			continue
		}
		if out != nil {
			return s.decode(kv.Value, kv.ModRevision, out)
		}
		return nil
	}
}
