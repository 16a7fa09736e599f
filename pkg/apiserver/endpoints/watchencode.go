package endpoints

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/jsonvalue"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// wireFormat is a watch stream's encoding.
type wireFormat int

const (
	wireJSON  wireFormat = iota // a stream of JSON objects, one a line
	wireProto                   // length-prefixed protobuf metav1.WatchEvent
	wireFormats
)

// encodeEvent returns the bytes of one watch event as the stream's format frames it.
// JSON: {"type":T,"object":O} and a newline, as encoding/json's Encoder writes metav1's
// WatchEvent (O is json.Marshal's output: compact, HTML-escaped). Protobuf: a 4-byte
// big-endian length, then metav1.WatchEvent whose object is in the protobuf envelope; an
// object without a protobuf form (a Table) goes as JSON inside it, which client-go decodes by
// its content.
func encodeEvent(f wireFormat, t watch.EventType, obj runtime.Object) ([]byte, error) {
	if f == wireProto {
		if fr, _, err := encodeProtoFrame(t, obj); err == nil {
			return fr, nil
		}
	}
	raw, err := marshalJSON(obj)
	if err != nil {
		return nil, err
	}
	return frameEvent(f, t, raw)
}

// protoFrameRoom is what a protobuf frame has before its object's envelope: the length
// prefix, the event type's field (at most "BOOKMARK") and the two lengths of the object's
// field (RawExtension, then its raw bytes), each at most a 5-byte varint.
const protoFrameRoom = 4 + (1 + 1 + len(watch.Bookmark)) + (1 + 5) + (1 + 5)

// encodeProtoFrame encodes obj in the protobuf envelope and frames it as event t, in one
// buffer: the frame is built around the envelope where the serializer wrote it. env is the
// envelope, at the end of the frame. It fails when obj has no protobuf form.
func encodeProtoFrame(t watch.EventType, obj runtime.Object) (frame, env []byte, err error) {
	buf, env, err := encodeProtoRoom(obj, protoFrameRoom)
	if err != nil {
		return nil, nil, err
	}
	ev := metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: env}}
	n := ev.Size()
	if buf == nil || n+4 > len(buf) { // not one buffer, or not room enough before the envelope
		fr, err := frameEvent(wireProto, t, env)
		if err != nil {
			return nil, nil, err
		}
		return fr, fr[len(fr)-len(env):], nil
	}
	// The generated marshaller writes from the end: env onto itself, then the fields before it.
	start := len(buf) - n
	if _, err := ev.MarshalToSizedBuffer(buf[start:]); err != nil {
		return nil, nil, err
	}
	binary.BigEndian.PutUint32(buf[start-4:], uint32(n))
	return buf[start-4:], env, nil
}

// marshalJSON is json.Marshal(obj); an unstructured object's bytes are those of its map
// (what its MarshalJSON writes, compact and HTML-escaped), encoded without reflection.
func marshalJSON(obj any) ([]byte, error) {
	if b, ok := unstructuredJSON(obj); ok {
		return b, nil
	}
	return json.Marshal(obj)
}

// unstructuredJSON is an unstructured object's JSON (what its MarshalJSON writes), encoded
// from its map without reflection; false for anything else, or when that fails.
func unstructuredJSON(obj any) ([]byte, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return nil, false
	}
	b, err := jsonvalue.Marshal(u.Object)
	return b, err == nil
}

// encodeBodyJSON is obj as a JSON response body writes it (encoding/json's Encoder without
// HTML escaping), without the Encoder's final newline: also how obj appears as an item of a
// list's JSON. An unstructured object writes itself HTML-escaped (its MarshalJSON), which
// the Encoder keeps: marshalJSON's bytes.
func encodeBodyJSON(obj any) ([]byte, error) {
	if b, ok := unstructuredJSON(obj); ok {
		return b, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func frameEvent(f wireFormat, t watch.EventType, raw []byte) ([]byte, error) {
	if f == wireProto {
		ev := metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: raw}}
		n := ev.Size()
		out := make([]byte, 4+n)
		binary.BigEndian.PutUint32(out, uint32(n))
		if _, err := ev.MarshalToSizedBuffer(out[4:]); err != nil {
			return nil, err
		}
		return out, nil
	}
	typ, err := json.Marshal(string(t))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(`{"type":,"object":}`)+len(typ)+len(raw)+1)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	out = append(out, `,"object":`...)
	out = append(out, raw...)
	out = append(out, "}\n"...)
	return out, nil
}

// eventTypes are the watch events whose frames are cached: those that carry a stored object.
// Bookmarks and errors are made for one watcher and never shared.
var eventTypes = [...]watch.EventType{watch.Added, watch.Modified, watch.Deleted}

func eventTypeIndex(t watch.EventType) int {
	for i, et := range eventTypes {
		if et == t {
			return i
		}
	}
	return -1
}

// objectKey names one stored state of one object as one store serves it. Objects of a store
// backed by the watch cache are named by their uid and resourceVersion (a stored state never
// changes, and every read of it through that store decodes to the same object: gets, lists
// and watch events then share one encoding); other objects by their identity (pointer),
// which only the watchers of one event share.
type objectKey struct {
	store any // the registry store: one object reads differently through different versions
	uid   types.UID
	rv    string
	ptr   runtime.Object
}

// storedKey names obj as a stored state read through store; false when obj lacks a uid or
// resourceVersion (then nothing is cached for it).
func storedKey(store any, obj runtime.Object) (objectKey, bool) {
	var uid types.UID
	var rv string
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// As its accessors read them, with one look-up of metadata: every list item asks.
		m, _ := u.Object["metadata"].(map[string]any)
		s, _ := m["uid"].(string)
		uid = types.UID(s)
		rv, _ = m["resourceVersion"].(string)
	} else {
		a, err := meta.Accessor(obj)
		if err != nil {
			return objectKey{}, false
		}
		uid, rv = a.GetUID(), a.GetResourceVersion()
	}
	if uid == "" || rv == "" {
		return objectKey{}, false
	}
	return objectKey{store: store, uid: uid, rv: rv}, true
}

// encodingCache remembers the encodings of the objects that many readers are sent, so that
// N watchers of one resource, or N lists and gets of the same objects, cost one encoding per
// format (upstream's cachingObject, and more): the watch frames in each format and event type,
// the object as a protobuf and a JSON body, and as a list item. Objects made for one reader
// (a Table, a PartialObjectMetadata) must not be passed in.
//
// It is bounded by the bytes of its encodings and by the number of objects; the oldest
// entries go first, so what it keeps is the events in flight and the objects read lately.
// An entry keyed by pointer also keeps its object alive.
type encodingCache struct {
	limit      int // bytes
	maxObjects int

	mu      sync.RWMutex
	entries map[objectKey]*encodings
	// aliases finds the entries of the watch cache's own objects by identity: a list from
	// the cache hands over the same object for a stored state every time, and finding its
	// entry so reads nothing of it (storedKey reads its uid and resourceVersion: for a custom
	// object, several maps, cold in memory for all but the latest objects, which cost a list
	// of 100 more than its encoding). At most one alias per entry, dropped with it; it keeps
	// its object alive as long.
	aliases map[aliasKey]*encodings
	// latest is the newest cached state of each object (a stored state's key): a newer one
	// drops it at once, since its encodings can then serve only a watcher still behind
	// (which encodes it again). A cache filled with the superseded states of objects written
	// in bursts (a Pod's creation, scheduling and start) held twice or more what its current
	// objects' encodings take.
	latest map[latestKey]objectKey
	order  []objectKey // oldest first, from head
	head   int
	bytes  int
}

// aliasKey is an object the watch cache holds, read through store.
type aliasKey struct {
	store any
	obj   runtime.Object
}

// latestKey is one object as store serves it, in all its stored states.
type latestKey struct {
	store any
	uid   types.UID
}

// encodings are one object's encodings, filled as readers ask for them.
type encodings struct {
	mu sync.Mutex // held while encoding: one encoding, the others wait for it
	// proto is the object in the protobuf envelope (a get's body, a watch event's object),
	// raw the offsets of the object's own message in it (a list's item); noProto: the object
	// has no protobuf form.
	proto   []byte
	raw     [2]int
	noProto bool
	// json is json.Marshal's output (HTML-escaped: a watch event's object); body is a
	// response body's (encodeBodyJSON: a get's body without its newline, a list's item).
	// Without any of <, > and & they are the same bytes.
	json, body []byte
	frames     [wireFormats][len(eventTypes)][]byte
	// Which encodings are views of others, not bytes of their own (for the size).
	protoInFrame, jsonInFrame, bodyIsJSON bool
	// Under the cache's mu:
	size    int      // bytes accounted for in the cache
	evicted bool     // no longer in the cache
	alias   aliasKey // the key of its entry in aliases (obj nil: none)
}

// entryOverhead approximates what an entry costs besides its encodings: the map slot and
// key, the order slot and the encodings struct.
const entryOverhead = 400

// footprint is the bytes e holds (e.mu held).
func (e *encodings) footprint() int {
	n := entryOverhead
	for f := range e.frames {
		for _, fr := range e.frames[f] {
			n += len(fr)
		}
	}
	if !e.protoInFrame {
		n += len(e.proto)
	}
	if !e.jsonInFrame {
		n += len(e.json)
	}
	if !e.bodyIsJSON {
		n += len(e.body)
	}
	return n
}

func newEncodingCache(limit, maxObjects int) *encodingCache {
	return &encodingCache{limit: limit, maxObjects: maxObjects, entries: map[objectKey]*encodings{}, aliases: map[aliasKey]*encodings{}, latest: map[latestKey]objectKey{}}
}

// ensureProto fills e.proto (e.mu held); false when obj has no protobuf form.
func (e *encodings) ensureProto(obj runtime.Object) bool {
	if e.proto == nil && !e.noProto {
		env, err := encodeProto(obj)
		if err != nil {
			e.noProto = true
			return false
		}
		start, end, ok := envelopeRaw(env)
		if !ok {
			e.noProto = true
			return false
		}
		e.proto, e.raw = env, [2]int{start, end}
	}
	return !e.noProto
}

var htmlEscapes = [][]byte{[]byte(`\u003c`), []byte(`\u003e`), []byte(`\u0026`)}

// ensureJSON fills e.json (e.mu held).
func (e *encodings) ensureJSON(obj runtime.Object) error {
	if e.json != nil {
		return nil
	}
	if e.body != nil && !bytes.ContainsAny(e.body, "<>&") {
		// Nothing json.Marshal would escape: the same bytes.
		e.json, e.bodyIsJSON = e.body, true
		return nil
	}
	raw, err := marshalJSON(obj)
	if err != nil {
		return err
	}
	e.json = raw
	return nil
}

// ensureBody fills e.body (e.mu held).
func (e *encodings) ensureBody(obj runtime.Object) error {
	if e.body != nil {
		return nil
	}
	if e.json != nil && !containsAny(e.json, htmlEscapes) {
		// json.Marshal escaped nothing (a string holding a literal `\u003c` would read as
		// if it had, and is encoded again): the same bytes.
		e.body, e.bodyIsJSON = e.json, true
		return nil
	}
	raw, err := encodeBodyJSON(obj)
	if err != nil {
		return err
	}
	e.body = raw
	return nil
}

func containsAny(b []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

// frame returns the frame of event t with obj in format f, encoding it only if no one did
// before; store is the registry store obj was read from when it is cached by its stored
// state (nil: by identity). The returned bytes are shared: the caller must not change them.
func (c *encodingCache) frame(store any, f wireFormat, t watch.EventType, obj runtime.Object) ([]byte, error) {
	ti := eventTypeIndex(t)
	if c == nil || ti < 0 || obj == nil || reflect.TypeOf(obj).Kind() != reflect.Pointer {
		return encodeEvent(f, t, obj)
	}
	key := objectKey{ptr: obj}
	if store != nil {
		var ok bool
		if key, ok = storedKey(store, obj); !ok {
			return encodeEvent(f, t, obj)
		}
	}
	e := c.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if fr := e.frames[f][ti]; fr != nil {
		return fr, nil
	}
	if f == wireProto && e.proto == nil && !e.noProto {
		// Encoded and framed in one buffer, the envelope kept inside the frame.
		if fr, env, err := encodeProtoFrame(t, obj); err == nil {
			if start, end, ok := envelopeRaw(env); ok {
				e.proto, e.raw, e.protoInFrame = env, [2]int{start, end}, true
				e.frames[f][ti] = fr
				c.resize(e)
				return fr, nil
			}
		}
	}
	var raw []byte
	if f == wireProto && e.ensureProto(obj) {
		raw = e.proto
	} else {
		if err := e.ensureJSON(obj); err != nil {
			return nil, err
		}
		raw = e.json
	}
	fr, err := frameEvent(f, t, raw)
	if err != nil {
		return nil, err
	}
	e.frames[f][ti] = fr
	// Both frames end with the object's bytes (JSON then closes the event): keep those
	// inside the frame rather than a second copy.
	end := len(fr)
	if f == wireJSON {
		end -= len("}\n")
	}
	tail := fr[end-len(raw) : end : end]
	switch {
	case f == wireProto && !e.noProto && !e.protoInFrame:
		e.proto, e.protoInFrame = tail, true
	case (f == wireJSON || e.noProto) && !e.jsonInFrame:
		e.json, e.jsonInFrame = tail, true
		if e.bodyIsJSON {
			e.body = tail
		}
	}
	c.resize(e)
	return fr, nil
}

// objectProto returns obj in the protobuf envelope and, inside it, obj's own message;
// ok is false when obj has no protobuf form. The bytes are shared: do not change them.
func (c *encodingCache) objectProto(store any, obj runtime.Object, shared bool) (env, msg []byte, ok bool) {
	e, cacheable := c.lookup(store, obj, shared)
	if !cacheable {
		env, err := encodeProto(obj)
		if err != nil {
			return nil, nil, false
		}
		start, end, ok := envelopeRaw(env)
		if !ok {
			return nil, nil, false
		}
		return env, env[start:end:end], true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proto == nil && !e.noProto {
		defer c.resize(e) // after the encoding, still under e.mu
	}
	if !e.ensureProto(obj) {
		return nil, nil, false
	}
	return e.proto, e.proto[e.raw[0]:e.raw[1]:e.raw[1]], true
}

// objectBody returns obj as a JSON response body (and list item) without the final newline.
// The bytes are shared: do not change them.
func (c *encodingCache) objectBody(store any, obj runtime.Object, shared bool) ([]byte, error) {
	e, cacheable := c.lookup(store, obj, shared)
	if !cacheable {
		return encodeBodyJSON(obj)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.body != nil {
		return e.body, nil
	}
	if err := e.ensureBody(obj); err != nil {
		return nil, err
	}
	c.resize(e)
	return e.body, nil
}

// lookup finds or adds the encodings of obj read through store, by its identity when it is
// one of the watch cache's own objects (shared), else by its stored state; false when obj is
// not cached (nil c, or no uid or resourceVersion).
func (c *encodingCache) lookup(store any, obj runtime.Object, shared bool) (*encodings, bool) {
	if c == nil {
		return nil, false
	}
	var ak aliasKey
	if shared && obj != nil && reflect.TypeOf(obj).Kind() == reflect.Pointer {
		ak = aliasKey{store, obj}
		c.mu.RLock()
		e := c.aliases[ak]
		c.mu.RUnlock()
		if e != nil {
			return e, true
		}
	}
	key, ok := storedKey(store, obj)
	if !ok {
		return nil, false
	}
	e := c.entry(key)
	if ak.obj != nil {
		c.mu.Lock()
		if !e.evicted && e.alias != ak {
			if e.alias.obj != nil {
				delete(c.aliases, e.alias)
			}
			e.alias = ak
			c.aliases[ak] = e
		}
		c.mu.Unlock()
	}
	return e, true
}

// entry finds or adds the encodings of key.
func (c *encodingCache) entry(key objectKey) *encodings {
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if ok {
		return e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		return e
	}
	e = &encodings{size: entryOverhead}
	c.entries[key] = e
	c.order = append(c.order, key)
	c.bytes += entryOverhead
	if key.uid != "" {
		lk := latestKey{key.store, key.uid}
		if old, ok := c.latest[lk]; !ok {
			c.latest[lk] = key
		} else if newerRV(key.rv, old.rv) {
			c.drop(old)
			c.latest[lk] = key
		}
	}
	c.evict()
	return e
}

// newerRV reports whether resourceVersion a is after b; false when either is not a
// revision (nothing is dropped for it then).
func newerRV(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// drop removes key's entry, if cached (c.mu held): its current readers still hold it, no
// one finds it again. Its slot in order is skipped when its turn comes.
func (c *encodingCache) drop(key objectKey) {
	e, ok := c.entries[key]
	if !ok {
		return
	}
	c.bytes -= e.size
	e.size, e.evicted = 0, true
	delete(c.entries, key)
	if e.alias.obj != nil {
		delete(c.aliases, e.alias)
		e.alias = aliasKey{}
	}
	if lk := (latestKey{key.store, key.uid}); key.uid != "" && c.latest[lk] == key {
		delete(c.latest, lk)
	}
}

// resize accounts e's bytes anew (e.mu held), if e is still cached, and evicts the oldest
// entries over the limit.
func (c *encodingCache) resize(e *encodings) {
	n := e.footprint()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.evicted || n == e.size {
		return // evicted: only its current readers hold it now
	}
	c.bytes += n - e.size
	e.size = n
	c.evict()
}

// evict drops the oldest entries while the cache is over its limits (c.mu held). The
// newest entry always stays, however large.
func (c *encodingCache) evict() {
	for (c.bytes > c.limit || len(c.entries) > c.maxObjects) && len(c.order)-c.head > 1 {
		old := c.order[c.head]
		c.order[c.head] = objectKey{}
		c.head++
		c.drop(old)
	}
	if c.head > 64 && c.head > len(c.order)/2 {
		n := copy(c.order, c.order[c.head:])
		clear(c.order[n:])
		c.order = c.order[:n]
		c.head = 0
	}
}

// stats reports what the cache holds.
func (c *encodingCache) stats() (objects, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}
