package endpoints

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	raw, err := encodeWatchObject(f, obj)
	if err != nil {
		return nil, err
	}
	return frameEvent(f, t, raw)
}

func encodeWatchObject(f wireFormat, obj runtime.Object) ([]byte, error) {
	if f == wireProto {
		if raw, err := encodeProto(obj); err == nil {
			return raw, nil
		}
	}
	return json.Marshal(obj)
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

// encodingCache remembers the watch frames of the objects that many watchers are sent, so
// that N watchers of one resource in one format cost one encoding (upstream's
// cachingObject): the watch cache hands every watcher of a resource the very same object.
// It is keyed by the object's identity (its pointer): what storage hands out is shared by
// every reader and never changed afterwards. Objects made for one watcher (a Table, a
// PartialObjectMetadata) must not be passed in; they would only take room.
//
// It is bounded by the bytes of its frames and by the number of objects (each entry also
// keeps its object alive, which may be a version storage has since replaced); the oldest
// objects go first, so what it keeps is the events in flight, not the cached state.
type encodingCache struct {
	limit      int // bytes
	maxObjects int

	mu      sync.Mutex
	entries map[runtime.Object]*encodings
	order   []runtime.Object // oldest first, from head
	head    int
	bytes   int
}

// encodings are one object's frames, filled as watchers ask for them.
type encodings struct {
	mu     sync.Mutex          // held while encoding: one encoding, the others wait for it
	object [wireFormats][]byte // inside the first frame made in that format
	frames [wireFormats][len(eventTypes)][]byte
	// Under the cache's mu:
	size    int  // bytes accounted for in the cache
	evicted bool // no longer in the cache
}

// entryOverhead approximates what an entry costs besides its frames: the map slot, the
// order slot and the encodings struct.
const entryOverhead = 280

func newEncodingCache(limit, maxObjects int) *encodingCache {
	return &encodingCache{limit: limit, maxObjects: maxObjects, entries: map[runtime.Object]*encodings{}}
}

// frame returns the frame of event t with obj in format f, encoding it only if no one did
// before. The returned bytes are shared: the caller must not change them.
func (c *encodingCache) frame(f wireFormat, t watch.EventType, obj runtime.Object) ([]byte, error) {
	ti := eventTypeIndex(t)
	if c == nil || ti < 0 || obj == nil || reflect.TypeOf(obj).Kind() != reflect.Pointer {
		return encodeEvent(f, t, obj)
	}
	e := c.entry(obj)
	e.mu.Lock()
	defer e.mu.Unlock()
	if fr := e.frames[f][ti]; fr != nil {
		return fr, nil
	}
	raw := e.object[f]
	fresh := raw == nil
	if fresh {
		var err error
		if raw, err = encodeWatchObject(f, obj); err != nil {
			return nil, err
		}
	}
	fr, err := frameEvent(f, t, raw)
	if err != nil {
		return nil, err
	}
	e.frames[f][ti] = fr
	if fresh {
		// Both frames end with the object's bytes (JSON then closes the event): keep
		// those inside the frame rather than a second copy.
		end := len(fr)
		if f == wireJSON {
			end -= len("}\n")
		}
		e.object[f] = fr[end-len(raw) : end : end]
	}
	c.grow(e, len(fr))
	return fr, nil
}

// entry finds or adds obj's encodings.
func (c *encodingCache) entry(obj runtime.Object) *encodings {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[obj]; ok {
		return e
	}
	e := &encodings{size: entryOverhead}
	c.entries[obj] = e
	c.order = append(c.order, obj)
	c.bytes += entryOverhead
	c.evict()
	return e
}

// grow accounts n more bytes to e, if e is still cached, and evicts the oldest entries
// over the limit.
func (c *encodingCache) grow(e *encodings, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.evicted {
		return // only its current readers hold it now
	}
	e.size += n
	c.bytes += n
	c.evict()
}

// evict drops the oldest entries while the cache is over its limits (c.mu held). The
// newest entry always stays, however large.
func (c *encodingCache) evict() {
	for (c.bytes > c.limit || len(c.entries) > c.maxObjects) && len(c.order)-c.head > 1 {
		old := c.order[c.head]
		c.order[c.head] = nil
		c.head++
		if e, ok := c.entries[old]; ok {
			c.bytes -= e.size
			e.size, e.evicted = 0, true
			delete(c.entries, old)
		}
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
