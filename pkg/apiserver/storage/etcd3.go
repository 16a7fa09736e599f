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
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// timeout. A retried write decides from etcd's history whether an earlier attempt was
	// applied (see outcome.go), and fails with ErrCodeUnknownOutcome when it cannot tell.
	// Zero: one attempt, no bound.
	AttemptTimeout time.Duration
	// KV, when set, serves the store's reads and writes in place of the client's (tests put
	// faults between the store and etcd through it). Watches and history use the client.
	KV clientv3.KV
	// Transformer, when set, changes every value on its way to etcd and back (encryption at
	// rest, chosen per resource by whoever builds the store); nil stores values as encoded.
	Transformer Transformer
}

// Etcd3 implements Interface on an etcd v3 client.
type Etcd3 struct {
	client *clientv3.Client
	kv     clientv3.KV
	cfg    Config
	// seen is the highest revision etcd has reported to this store: a lower bound for the
	// revision of any write it sends afterwards.
	seen atomic.Int64
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
	kv := cfg.KV
	if kv == nil {
		kv = client.KV
	}
	return &Etcd3{client: client, kv: retryReads{kv}, cfg: cfg}
}

// A read that failed because etcd lost or changed its leader is sent again after
// readRetryWait (clientv3's own pause), for at most readRetryFor: about as long as clientv3's
// gRPC interceptor retries, and several of etcd's election timeouts.
const (
	readRetryWait = 25 * time.Millisecond
	readRetryFor  = 3 * time.Second
)

// retryReads makes the retries of a KV's reads that etcd's gRPC client makes in its
// interceptor. The embedded member's local KV (embedetcd.LocalClient) calls into the member
// with no gRPC in between, so without this a linearizable read that met an election failed at
// once with "etcdserver: leader changed". Reads are always safe to send again.
type retryReads struct{ clientv3.KV }

func (r retryReads) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	giveUp := time.Now().Add(readRetryFor)
	for {
		resp, err := r.KV.Get(ctx, key, opts...)
		if err == nil || !retryable(ctx, err) || time.Now().After(giveUp) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(readRetryWait):
		}
	}
}

// saw records a revision etcd reported.
func (s *Etcd3) saw(rev int64) {
	for {
		cur := s.seen.Load()
		if rev <= cur || s.seen.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// FullKey is key as stored in etcd, under the configured prefix.
func (s *Etcd3) FullKey(key string) string { return s.fullKey(key) }

func (s *Etcd3) fullKey(key string) string {
	return s.cfg.Prefix + "/" + strings.TrimPrefix(key, "/")
}

func (s *Etcd3) decode(data []byte, rev int64, into runtime.Object) error {
	if err := s.cfg.Codec.Decode(data, into); err != nil {
		// A codec's error carrying an API status (a conversion webhook's failure) reaches
		// the client as it is; any other means a corrupt object (the caller names its key).
		var st interface{ Status() metav1.Status }
		if errors.As(err, &st) {
			return err
		}
		return corruptError("", false, rev, err)
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
	// Over etcd's --max-request-bytes, or over the client's send limit: never retryable.
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || status.Code(err) == codes.ResourceExhausted {
		return &Error{Code: ErrCodeTooLarge, Key: key, Msg: err.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return &Error{Code: ErrCodeTimeout, Key: key, Msg: "the request did not complete in time: " + err.Error()}
	}
	return &Error{Code: ErrCodeUnreachable, Key: key, Msg: fmt.Sprintf("etcd: %v", err)}
}

// Revision returns the current revision by a linearizable read.
func (s *Etcd3) Revision(ctx context.Context) (int64, error) {
	resp, err := s.kv.Get(ctx, s.cfg.Prefix+"/\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, wrapEtcdErr("", err)
	}
	s.saw(resp.Header.Revision)
	return resp.Header.Revision, nil
}

// errProposalDropped is raft's ErrProposalDropped as etcd passes it to clients (gRPC code
// Unknown): a leader transferring its leadership refuses new proposals.
const errProposalDropped = "raft proposal dropped"

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
	case status.Code(err) == codes.Unknown && status.Convert(err).Message() == errProposalDropped:
		return true // the leader is handing over: the proposal was not taken
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

// write runs a write's attempts (see attempt). op must find out, when retried, whether an
// earlier attempt was applied. A failure after which the write may or may not have been
// applied is ErrCodeUnknownOutcome, never a success or a failure etcd cannot prove.
func (s *Etcd3) write(ctx context.Context, key string, op func(ctx context.Context, retried bool) error) error {
	retried := false
	err := s.attempt(ctx, func(ctx context.Context, r bool) error {
		retried = r
		return op(ctx, r)
	})
	var se *Error
	switch {
	case err == nil, errors.As(err, &se):
		return err
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return err // nobody is waiting for the answer
	case retried || ambiguous(err):
		return errUnknownOutcome(key, err)
	}
	return wrapEtcdErr(key, err)
}

// Create writes obj at key if nothing is there. When an attempt is retried (see
// AttemptTimeout), an earlier one may have been applied meanwhile, and the object changed or
// deleted since: the retry looks for the very bytes it writes (they hold the object's uid)
// in the key's history since before the first attempt, and reports success at their
// revision if it finds them, so a create happens once and is acknowledged once.
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
	stored, err := s.toStorage(ctx, s.fullKey(key), data)
	if err != nil {
		return err
	}
	since := s.seen.Load()
	if since == 0 && s.cfg.AttemptTimeout > 0 {
		if since, err = s.Revision(ctx); err != nil {
			return err
		}
	}
	var rev int64
	err = s.write(ctx, key, func(ctx context.Context, retried bool) (err error) {
		rev, err = s.createOnce(ctx, key, stored, since, retried)
		return err
	})
	if err != nil {
		return err
	}
	if out != nil {
		return s.into(obj, data, rev, out)
	}
	return nil
}

// createOnce is one attempt of Create; it returns the revision of the object it wrote.
// data is the value as stored (after the transformer). since is a revision from before the
// first attempt; retried says an earlier attempt may have been applied.
func (s *Etcd3) createOnce(ctx context.Context, key string, data []byte, since int64, retried bool) (int64, error) {
	k := s.fullKey(key)
	if retried {
		resp, err := s.kv.Get(ctx, k)
		if err != nil {
			return 0, err
		}
		if len(resp.Kvs) > 0 && string(resp.Kvs[0].Value) == string(data) {
			return resp.Kvs[0].ModRevision, nil // our earlier attempt, unchanged
		}
		if rev, err := s.putOf(ctx, k, data, since, resp.Header.Revision); err != nil || rev != 0 {
			return rev, err // our earlier attempt, changed or deleted since
		}
	}
	resp, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(data))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return 0, err
	}
	s.saw(resp.Header.Revision)
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if r := resp.Responses[0].GetResponseRange(); retried && r != nil && len(r.Kvs) > 0 && string(r.Kvs[0].Value) == string(data) {
		return r.Kvs[0].ModRevision, nil // our earlier attempt, applied after the look above
	}
	return 0, &Error{Code: ErrCodeExists, Key: key}
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
	resp, err := s.kv.Get(ctx, s.fullKey(key), ops...)
	if err != nil {
		return wrapEtcdErr(key, err)
	}
	s.saw(resp.Header.Revision)
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
	return asCallerKey(s.decodeKV(ctx, resp.Kvs[0].Key, resp.Kvs[0].Value, resp.Kvs[0].ModRevision, out), key)
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

// decodeContinue reads a continue token. Whatever is wrong with it, a bad token is
// ErrCodeInvalidRV with upstream's message ("invalid continue token: ..."), a 400 for clients.
// A token names the revision its list was read at; one that names none (zero or negative)
// is refused.
func decodeContinue(token, keyPrefix string) (fromKey string, rev int64, err error) {
	bad := func(why string) error {
		return &Error{Code: ErrCodeInvalidRV, Msg: "invalid continue token: continue key is not valid: " + why}
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, bad("not base64")
	}
	var c continueToken
	if err := json.Unmarshal(b, &c); err != nil {
		return "", 0, bad("not a continue token")
	}
	if c.APIVersion != "meta.k8s.io/v1" {
		return "", 0, bad(fmt.Sprintf("unrecognized version %q", c.APIVersion))
	}
	if c.ResourceVersion <= 0 {
		return "", 0, bad(fmt.Sprintf("incorrect encoded start resourceVersion %d (version meta.k8s.io/v1)", c.ResourceVersion))
	}
	// Refuse keys that climb out of the prefix.
	cleaned := path.Clean("/" + c.StartKey)
	if c.StartKey == "" || strings.Contains(c.StartKey, "..") || cleaned == "/" {
		return "", 0, bad(fmt.Sprintf("start key %q", c.StartKey))
	}
	return keyPrefix + c.StartKey, c.ResourceVersion, nil
}

// GetList reads the objects under key that match opts: planned (which revision, from which
// key, how many per round trip), read in batches, then the list's metadata set.
func (s *Etcd3) GetList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) error {
	list, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	p, err := s.planList(key, opts)
	if err != nil {
		return err
	}
	r, err := s.readList(ctx, key, opts, p)
	if err != nil {
		return err
	}
	if err := r.corrupt.err(); err != nil {
		return err
	}
	if err := meta.SetList(listObj, r.items); err != nil {
		return err
	}
	return s.setListMeta(ctx, list, opts, p, r)
}

// listPlan is how GetList reads a list.
type listPlan struct {
	keyPrefix string
	fromKey   string // the first key to read
	contKey   string // where the continue token starts
	rangeEnd  string // "" for a single key
	withRev   int64  // the revision to read at; 0 for the current one
	serial    bool   // a serializable read (resourceVersion "0")
	checkMin  int64  // the least revision the read must be at
	limit     int64  // items to return at most; 0 for all
	batch     int64  // keys to read per round trip; 0 for all
}

// planList works out from opts which revision GetList reads at, from which key and how much.
func (s *Etcd3) planList(key string, opts ListOptions) (*listPlan, error) {
	keyPrefix := s.fullKey(key)
	if opts.Recursive && !strings.HasSuffix(keyPrefix, "/") {
		keyPrefix += "/"
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	p := &listPlan{keyPrefix: keyPrefix, fromKey: keyPrefix}
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, &Error{Code: ErrCodeInvalidRV, Msg: "specifying resource version is not allowed when using continue"}
		}
		p.fromKey, p.withRev, err = decodeContinue(opts.Continue, keyPrefix)
		if err != nil {
			return nil, err
		}
		p.contKey = p.fromKey
	case opts.ResourceVersionMatch == "Exact":
		if rv == 0 {
			return nil, &Error{Code: ErrCodeInvalidRV, Msg: "resourceVersionMatch=Exact requires a non-zero resourceVersion"}
		}
		p.withRev = rv
	case opts.ResourceVersionMatch == "" && opts.Limit > 0 && opts.Recursive && rv > 0:
		// The legacy meaning of a resourceVersion on a paged list, as upstream: the first
		// page, and so every page after it, is read at exactly that revision.
		p.withRev = rv
	case opts.ResourceVersion == "0":
		p.serial = true
	default:
		p.checkMin = rv
	}

	p.rangeEnd = clientv3.GetPrefixRangeEnd(keyPrefix)
	if !opts.Recursive {
		p.rangeEnd = ""
		p.fromKey = keyPrefix
	}
	p.limit = opts.Limit
	if !opts.Recursive {
		p.limit = 0
	}
	p.batch = p.limit
	if p.batch > 0 && !opts.Predicate.Empty() {
		// Filtering discards some items: read a little more per round trip.
		p.batch = max(p.batch, 100)
	}
	return p, nil
}

// listRead is what readList read.
type listRead struct {
	items   []runtime.Object
	readRev int64  // the revision read at
	more    bool   // items are left after lastKey
	lastKey []byte // with more: the first key not returned
	corrupt corruptList
}

// readList reads the plan's keys in batches, decoding and filtering them, until the limit
// is reached or the range ends.
func (s *Etcd3) readList(ctx context.Context, key string, opts ListOptions, p *listPlan) (*listRead, error) {
	var ops []clientv3.OpOption
	if p.serial {
		ops = append(ops, clientv3.WithSerializable())
	}
	newItem := s.cfg.NewFunc
	r := &listRead{readRev: p.withRev}
	fromKey := p.fromKey
	for {
		o := append([]clientv3.OpOption{}, ops...)
		if p.rangeEnd != "" {
			o = append(o, clientv3.WithRange(p.rangeEnd))
		}
		if p.batch > 0 {
			o = append(o, clientv3.WithLimit(p.batch))
		}
		if r.readRev > 0 {
			o = append(o, clientv3.WithRev(r.readRev))
		}
		resp, err := s.kv.Get(ctx, fromKey, o...)
		if err != nil {
			return nil, s.listReadError(ctx, key, opts, p, r.readRev, err)
		}
		if r.readRev == 0 {
			r.readRev = resp.Header.Revision
			if p.checkMin > r.readRev {
				return nil, &Error{Code: ErrCodeTooLargeRV, Key: key, RV: p.checkMin, Msg: fmt.Sprintf("Too large resource version: %d, current: %d", p.checkMin, r.readRev)}
			}
		}
		for _, kv := range resp.Kvs {
			r.lastKey = kv.Key
			if p.limit > 0 && int64(len(r.items)) >= p.limit {
				r.more = true
				break
			}
			obj := newItem()
			if err := s.decodeKV(ctx, kv.Key, kv.Value, kv.ModRevision, obj); err != nil {
				if goOn, err := r.corrupt.add(err); !goOn {
					return nil, err
				}
				continue
			}
			ok, err := opts.Predicate.Matches(obj)
			if err != nil {
				return nil, err
			}
			if ok {
				r.items = append(r.items, obj)
			}
		}
		if r.more {
			// lastKey is the first item we did not return.
			r.lastKey = r.lastKey[:len(r.lastKey):len(r.lastKey)]
			return r, nil
		}
		if !resp.More || p.batch == 0 {
			return r, nil
		}
		if p.limit > 0 && int64(len(r.items)) >= p.limit {
			// Exactly full: there is more in etcd.
			r.more = true
			r.lastKey = append(r.lastKey, 0)
			return r, nil
		}
		fromKey = string(r.lastKey) + "\x00"
	}
}

// listReadError is the error of a failed read of a list at readRev: a compacted revision
// is an expired resourceVersion, or an expired continue token with one that continues at
// the current revision, as upstream.
func (s *Etcd3) listReadError(ctx context.Context, key string, opts ListOptions, p *listPlan, readRev int64, err error) error {
	err = wrapEtcdErr(key, err)
	if IsExpired(err) && opts.Continue != "" {
		// As upstream, offer a token that continues at the current revision.
		next := ""
		if now, err := s.Revision(ctx); err == nil {
			next, _ = encodeContinue(p.contKey, p.keyPrefix, now)
		}
		return &Error{Code: ErrCodeExpired, Key: key, RV: p.withRev, Continue: next, Msg: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."}
	}
	if IsExpired(err) {
		return &Error{Code: ErrCodeExpired, Key: key, RV: readRev, Msg: fmt.Sprintf("too old resource version: %d", readRev)}
	}
	return err
}

// setListMeta sets the list's resourceVersion, its continue token and, when nothing is
// filtered, the count of the items left.
func (s *Etcd3) setListMeta(ctx context.Context, list metav1.ListInterface, opts ListOptions, p *listPlan, r *listRead) error {
	list.SetResourceVersion(strconv.FormatInt(r.readRev, 10))
	list.SetContinue("")
	list.SetRemainingItemCount(nil)
	if !r.more {
		return nil
	}
	next, err := encodeContinue(string(r.lastKey), p.keyPrefix, r.readRev)
	if err != nil {
		return err
	}
	list.SetContinue(next)
	if opts.Predicate.Empty() {
		// Count what is left from the first unreturned key.
		resp, err := s.kv.Get(ctx, string(r.lastKey), clientv3.WithRange(p.rangeEnd), clientv3.WithRev(r.readRev), clientv3.WithCountOnly())
		if err == nil {
			n := resp.Count
			list.SetRemainingItemCount(&n)
		}
	}
	return nil
}

// GuaranteedUpdate writes tryUpdate's result if the key did not change since it was read,
// and starts over on the fresh object otherwise. A retried write attempt never runs tryUpdate
// again: it re-sends the same conditional write, and when the key has changed meanwhile, the
// key's first change after the read tells whether an earlier attempt was applied.
func (s *Etcd3) GuaranteedUpdate(ctx context.Context, key string, out runtime.Object, ignoreNotFound bool, precond *Preconditions, tryUpdate UpdateFunc) error {
	k := s.fullKey(key)
	for {
		var resp *clientv3.GetResponse
		err := s.attempt(ctx, func(ctx context.Context, _ bool) (err error) {
			resp, err = s.kv.Get(ctx, k)
			return err
		})
		if err != nil {
			return wrapEtcdErr(key, err)
		}
		s.saw(resp.Header.Revision)
		current := s.cfg.NewFunc()
		var (
			modRev int64
			plain  []byte // the current value, transformed back
			stale  bool   // written by another provider or key than the first: rewrite it
		)
		if len(resp.Kvs) == 0 {
			if !ignoreNotFound {
				return &Error{Code: ErrCodeNotFound, Key: key}
			}
		} else {
			modRev = resp.Kvs[0].ModRevision
			if plain, stale, err = s.fromStorage(ctx, resp.Kvs[0].Key, resp.Kvs[0].Value); err != nil {
				return err
			}
			if err := s.decode(plain, modRev, current); err != nil {
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
		if modRev != 0 && !stale && string(data) == string(plain) {
			// No change: no write, same resourceVersion, as upstream.
			return s.decode(data, modRev, out)
		}
		stored, err := s.toStorage(ctx, k, data)
		if err != nil {
			return err
		}
		var rev int64
		err = s.write(ctx, key, func(ctx context.Context, retried bool) error {
			txn, err := s.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", modRev)).
				Then(clientv3.OpPut(k, string(stored))).Commit()
			switch {
			case err != nil:
				return err
			case txn.Succeeded:
				rev = txn.Header.Revision
			case retried && modRev != 0:
				// Applied, our attempt was the key's first change after modRev.
				ev, err := s.firstChange(ctx, k, modRev, txn.Header.Revision)
				if err != nil {
					return err
				}
				if ev != nil && ev.Type == clientv3.EventTypePut && string(ev.Kv.Value) == string(stored) {
					rev = ev.Kv.ModRevision
				}
			case retried:
				// The key was missing: any put of our bytes since the read.
				rev, err = s.putOf(ctx, k, stored, resp.Header.Revision, txn.Header.Revision)
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
		if rev == 0 {
			continue // someone else wrote first, and our write was not applied: start over
		}
		s.saw(rev)
		return s.into(updated, data, rev, out)
	}
}

// Delete removes the object at key if it did not change since it was read (after precond and
// validate approved of it there), and starts over otherwise. out receives the deleted object
// with the revision of the deletion, as upstream. A retried attempt that finds the key's
// first change after the read is a deletion cannot tell whose it was (a deletion carries no
// bytes): the outcome is then unknown.
func (s *Etcd3) Delete(ctx context.Context, key string, out runtime.Object, precond *Preconditions, validate ValidateFunc) error {
	k := s.fullKey(key)
	for {
		kv, err := s.readKey(ctx, key, k)
		if err != nil {
			return err
		}
		current := s.cfg.NewFunc()
		plain, _, err := s.fromStorage(ctx, kv.Key, kv.Value)
		if err != nil {
			return asCallerKey(err, key)
		}
		if err := s.decode(plain, kv.ModRevision, current); err != nil {
			return asCallerKey(err, key)
		}
		if err := precond.check(key, current); err != nil {
			return err
		}
		if validate != nil {
			if err := validate(ctx, current); err != nil {
				return err
			}
		}
		rev, err := s.deleteAt(ctx, key, k, kv.ModRevision)
		if err != nil {
			return err
		}
		if rev == 0 {
			continue // changed before our delete: check it again
		}
		if out != nil {
			return s.decode(plain, rev, out)
		}
		return nil
	}
}
