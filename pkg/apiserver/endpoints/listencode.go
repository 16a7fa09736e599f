package endpoints

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Gets and lists of objects served by the watch cache are written from the objects' cached
// encodings (the watch frames' cache): a list's body is its envelope (kind, metadata) with the
// items' bytes spliced in, byte for byte what encoding the whole list writes, without encoding
// an item again while it stays unchanged and cached. The body is streamed, as upstream's
// streaming collection encoders do: its parts (the envelope's pieces, separators, the items'
// cached bytes) are written one after the other, never copied into one buffer, so a list
// costs no memory of its size (a list of a thousand Pods was megabytes, times the lists in
// flight and the bodies kept for reuse).

// objectEncodings holds the encodings of the objects being read and watched, shared by every
// get, list and watch of this process: 32 MiB and 16,384 objects at most, oldest out first.
var objectEncodings = newEncodingCache(32<<20, 16384)

// cachedEncodings reports whether the objects st reads may be cached by their stored state:
// those of a generic store fed by the watch cache (never a per-request conversion).
func cachedEncodings(st registry.Storage) bool {
	s, ok := st.(*registry.Store)
	if !ok {
		return false
	}
	_, ok = s.Storage().(storage.CachedReader)
	return ok
}

// writeCached writes obj, a get's or a list's result, as writeObject does, from the cached
// encodings where it can.
func (s *scope) writeCached(w http.ResponseWriter, r *http.Request, obj runtime.Object) {
	o, err := negotiate(r)
	if err != nil || o.kind != outObject || o.yaml || !s.cachedEncodings {
		writeObject(w, r, http.StatusOK, obj)
		return
	}
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err == nil {
			var body *listBody
			var proto bool
			if body, proto, err = encodeList(objectEncodings, s.storage, false, o.proto, obj, items, true); err == nil {
				writeList(w, proto, body)
				return
			}
		}
		writeObject(w, r, http.StatusOK, obj)
		return
	}
	body, proto, err := encodeObject(objectEncodings, s.storage, o.proto, obj)
	if err != nil {
		writeObject(w, r, http.StatusOK, obj)
		return
	}
	writeBody(w, proto, body)
}

// listCached serves a list from the items' cached encodings without copying the watch
// cache's objects into a list first; reports false when that cannot be (the caller then
// lists as usual).
func (s *scope) listCached(w http.ResponseWriter, r *http.Request, ns string, opts *metav1.ListOptions) bool {
	il, ok := s.storage.(registry.ItemLister)
	if !ok || !s.cachedEncodings {
		return false
	}
	o, err := negotiate(r)
	if err != nil || o.kind != outObject || o.yaml {
		return false
	}
	list, items, shared, err := il.ListItems(r.Context(), ns, opts)
	if err != nil {
		writeError(w, r, err)
		return true
	}
	body, proto, err := encodeList(objectEncodings, s.storage, shared, o.proto, list, items, false)
	if err != nil {
		// Not spliced (no items, or the list's form not checked yet): the whole list.
		if err := meta.SetList(list, items); err != nil {
			writeError(w, r, err)
			return true
		}
		s.writeCached(w, r, list)
		return true
	}
	writeList(w, proto, body)
	return true
}

func writeBody(w http.ResponseWriter, proto bool, body []byte) {
	writeHeader(w, proto)
	_, _ = w.Write(body)
}

func writeHeader(w http.ResponseWriter, proto bool) {
	if proto {
		w.Header().Set("Content-Type", protobufType)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
}

// writeList streams a spliced list's body.
func writeList(w http.ResponseWriter, proto bool, body *listBody) {
	writeHeader(w, proto)
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	_, _ = body.WriteTo(bw)
	_ = bw.Flush()
	bw.Reset(nil)
	listWriters.Put(bw)
}

// listWriters gather a streamed list's small parts (separators, length prefixes, small
// items) into writes of a few kilobytes; a large item goes through as it is.
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 16<<10) }}

// listBody is a spliced list's body, written in parts: the envelope before the items, each
// item's cached encoding (shared, never modified) with what goes before it (a protobuf
// field's tag and length; a JSON comma and the item's "{"), the envelope after them.
type listBody struct {
	head, tail []byte
	items      [][]byte
	proto      bool
	braced     []bool // JSON: the item's "{" went with its kind (see spliceJSON)
	n          int
}

// Len is the body's length in bytes.
func (b *listBody) Len() int { return b.n }

// Bytes returns the body in one slice (a copy).
func (b *listBody) Bytes() []byte {
	var buf bytes.Buffer
	buf.Grow(b.n)
	_, _ = b.WriteTo(&buf)
	return buf.Bytes()
}

// WriteTo writes the body to w, part by part.
func (b *listBody) WriteTo(w io.Writer) (int64, error) {
	var n int64
	write := func(p []byte) error {
		m, err := w.Write(p)
		n += int64(m)
		return err
	}
	if err := write(b.head); err != nil {
		return n, err
	}
	sep := make([]byte, 0, 1+binary.MaxVarintLen64)
	for i, it := range b.items {
		switch {
		case b.proto:
			sep = binary.AppendUvarint(append(sep[:0], 0x12), uint64(len(it))) // field 2, length-delimited
		case i > 0 && b.braced[i]:
			sep = append(sep[:0], ',', '{')
		case i > 0:
			sep = append(sep[:0], ',')
		case b.braced[i]:
			sep = append(sep[:0], '{')
		default:
			sep = sep[:0]
		}
		if len(sep) > 0 {
			if err := write(sep); err != nil {
				return n, err
			}
		}
		if err := write(it); err != nil {
			return n, err
		}
	}
	return n, write(b.tail)
}

// encodeObject returns the body of obj (protobuf when asked and obj has that form, else
// JSON), as writeObject writes it; proto says which.
func encodeObject(c *encodingCache, store any, wantProto bool, obj runtime.Object) (body []byte, proto bool, err error) {
	if wantProto {
		if env, _, ok := c.objectProto(store, obj, false); ok {
			return env, true, nil
		}
	}
	b, err := c.objectBody(store, obj, false)
	if err != nil {
		return nil, false, err
	}
	body = make([]byte, len(b)+1)
	copy(body, b)
	body[len(b)] = '\n'
	return body, false, nil
}

var protoMagic = []byte("k8s\x00")

var errNotSpliced = errors.New("list cannot be spliced")

// listForms remembers, per list type and format, whether splicing gave what encoding the
// whole list gives: checked on the first list of each type with items, which is then
// encoded both ways.
var listForms sync.Map // listForm -> bool

type listForm struct {
	t     reflect.Type
	proto bool
}

// encodeList returns the body of a list as writeObject writes it, spliced from its items'
// cached encodings: list gives the kind and metadata, items the items. complete says list
// holds the items too, so that the first list of each type and format can be checked
// against the list's own encoding (see listForms); without, a form not checked yet is not
// spliced. shared says the items are the watch cache's own objects (found by identity, see
// encodingCache.aliases).
func encodeList(c *encodingCache, store any, shared, wantProto bool, list runtime.Object, items []runtime.Object, complete bool) (body *listBody, proto bool, err error) {
	if len(items) == 0 {
		return nil, false, errNotSpliced
	}
	empty, ok := emptyList(list)
	if !ok {
		return nil, false, errNotSpliced
	}
	splice := func(form listForm, env []byte, fn func(*encodingCache, any, bool, []byte, []runtime.Object) (*listBody, error)) (*listBody, bool, error) {
		if !complete {
			if ok, seen := listForms.Load(form); !seen || !ok.(bool) {
				return nil, false, errNotSpliced
			}
		}
		b, err := fn(c, store, shared, env, items)
		if err != nil {
			return nil, false, err
		}
		if complete {
			if err := checkList(form, list, b); err != nil {
				return nil, false, err
			}
		}
		return b, form.proto, nil
	}
	if wantProto {
		if env, err := encodeProto(empty); err == nil {
			return splice(listForm{reflect.TypeOf(list), true}, env, spliceProto)
		}
	}
	env, err := encodeBodyJSON(empty)
	if err != nil {
		return nil, false, err
	}
	return splice(listForm{reflect.TypeOf(list), false}, env, spliceJSON)
}

// checkList compares body with the list's own encoding the first time a form is used.
func checkList(form listForm, list runtime.Object, body *listBody) error {
	if ok, seen := listForms.Load(form); seen {
		if !ok.(bool) {
			return errNotSpliced
		}
		return nil
	}
	var want []byte
	var err error
	if form.proto {
		want, err = encodeProto(list)
	} else {
		want, err = encodeBodyJSON(listWithoutItemKinds(list))
		want = append(want, '\n')
	}
	same := err == nil && bytes.Equal(body.Bytes(), want)
	listForms.Store(form, same)
	if !same {
		return errNotSpliced
	}
	return nil
}

// emptyList returns a shallow copy of list without items.
func emptyList(list runtime.Object) (runtime.Object, bool) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	items := cp.Elem().FieldByName("Items")
	if !items.IsValid() || items.Kind() != reflect.Slice || !items.CanSet() {
		return nil, false
	}
	items.Set(reflect.MakeSlice(items.Type(), 0, 0))
	out, ok := cp.Interface().(runtime.Object)
	return out, ok
}

// spliceJSON puts the items' bodies into the empty list's body, env, at its "items":[].
func spliceJSON(c *encodingCache, store any, shared bool, env []byte, items []runtime.Object) (*listBody, error) {
	marker := []byte(`"items":[]`)
	at := bytes.Index(env, marker)
	if at < 0 {
		return nil, errNotSpliced
	}
	at += len(marker) - 1
	out := &listBody{head: env[:at], tail: append(env[at:len(env):len(env)], '\n'),
		items: make([][]byte, len(items)), braced: make([]bool, len(items))}
	out.n = len(out.head) + len(out.tail) + max(len(items)-1, 0)
	// A typed item's body (a get's) starts with its kind and apiVersion, which a list's
	// item has not (see listWithoutItemKinds): the item is "{" and the rest of the body.
	var gvk schema.GroupVersionKind // the items' kind, whose prefix is made once
	var prefix []byte
	for i, it := range items {
		b, err := c.objectBody(store, it, shared)
		if err != nil {
			return nil, err
		}
		if _, custom := it.(*unstructured.Unstructured); !custom {
			if g := it.GetObjectKind().GroupVersionKind(); g != gvk || prefix == nil {
				gvk, prefix = g, typeMetaPrefix(g)
			}
			if rest, ok := cutTypeMeta(b, prefix); ok {
				b, out.braced[i] = rest, true
				out.n++
			}
		}
		out.items[i] = b
		out.n += len(b)
	}
	return out, nil
}

// spliceProto puts the items' messages into the empty list's envelope, env: the list's
// message (the envelope's raw bytes) gets them appended as its field 2, every generated
// list's Items, after its ListMeta (field 1).
func spliceProto(c *encodingCache, store any, shared bool, env []byte, items []runtime.Object) (*listBody, error) {
	start, end, ok := envelopeRaw(env)
	if !ok {
		return nil, errNotSpliced
	}
	out := &listBody{proto: true, items: make([][]byte, len(items)), tail: env[end:]}
	added := 0
	for i, it := range items {
		_, msg, ok := c.objectProto(store, it, shared)
		if !ok {
			return nil, errNotSpliced
		}
		out.items[i] = msg
		added += 1 + uvarintLen(uint64(len(msg))) + len(msg)
	}
	rawLen := end - start + added
	// env[:tagAt] is the prefix and the fields before raw; tagAt its tag, then its length.
	tagAt := start - 1 - uvarintLen(uint64(end-start))
	head := make([]byte, 0, tagAt+1+binary.MaxVarintLen64+end-start)
	head = append(head, env[:tagAt+1]...)
	head = binary.AppendUvarint(head, uint64(rawLen))
	out.head = append(head, env[start:end]...)
	out.n = len(out.head) + added + len(out.tail)
	return out, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// envelopeRaw finds the object's own message in a protobuf envelope (the magic prefix, then
// runtime.Unknown, whose field 2 is the raw message): its start and end offsets.
func envelopeRaw(env []byte) (start, end int, ok bool) {
	if !bytes.HasPrefix(env, protoMagic) {
		return 0, 0, false
	}
	off := len(protoMagic)
	for off < len(env) {
		tag, n := binary.Uvarint(env[off:])
		if n <= 0 {
			return 0, 0, false
		}
		off += n
		switch tag & 7 {
		case 0: // varint
			_, m := binary.Uvarint(env[off:])
			if m <= 0 {
				return 0, 0, false
			}
			off += m
		case 2: // length-delimited
			l, m := binary.Uvarint(env[off:])
			if m <= 0 || l > uint64(len(env)-off-m) {
				return 0, 0, false
			}
			off += m
			if tag>>3 == 2 {
				return off, off + int(l), true
			}
			off += int(l)
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// afterTypeMeta returns what follows the kind and apiVersion that open body, a typed
// object's JSON encoding with gvk set (`{"kind":"K","apiVersion":"g/v",` or the same
// closed), such that "{" and it are the object's encoding without them; false when body does
// not open so.
func afterTypeMeta(body []byte, gvk schema.GroupVersionKind) ([]byte, bool) {
	return cutTypeMeta(body, typeMetaPrefix(gvk))
}

// typeMetaPrefix is how a typed object of gvk's JSON encoding opens, up to its apiVersion's
// value (empty for no kind).
func typeMetaPrefix(gvk schema.GroupVersionKind) []byte {
	if gvk.Kind == "" {
		return []byte{}
	}
	kind, err := json.Marshal(gvk.Kind)
	if err != nil {
		return []byte{}
	}
	av, err := json.Marshal(gvk.GroupVersion().String())
	if err != nil {
		return []byte{}
	}
	p := append([]byte(`{"kind":`), kind...)
	p = append(p, `,"apiVersion":`...)
	return append(p, av...)
}

// cutTypeMeta is afterTypeMeta with the prefix made.
func cutTypeMeta(body, prefix []byte) ([]byte, bool) {
	if len(prefix) == 0 {
		return nil, false
	}
	rest, ok := bytes.CutPrefix(body, prefix)
	if !ok || len(rest) == 0 {
		return nil, false
	}
	switch rest[0] {
	case ',':
		return rest[1:], true
	case '}':
		return rest, true
	}
	return nil, false
}

// listWithoutItemKinds returns obj, or, when obj is a typed list whose items have a kind or
// apiVersion, a copy of it (the items copied shallowly) whose items have neither: upstream
// converts a list's items from its internal types, which leaves their TypeMeta empty, so its
// JSON lists name the kind once, on the list (client-go's unstructured lists give the items
// theirs from it). Custom resources' items keep theirs, as upstream's do, and so do the
// items of a PartialObjectMetadataList, which upstream sets.
func listWithoutItemKinds(obj any) any {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	items := v.Elem().FieldByName("Items")
	if !items.IsValid() || items.Kind() != reflect.Slice || items.Len() == 0 {
		return obj
	}
	et := items.Type().Elem()
	if et.Kind() != reflect.Struct || et == reflect.TypeOf(metav1.PartialObjectMetadata{}) {
		return obj
	}
	f, ok := et.FieldByName("TypeMeta")
	if !ok || !f.Anonymous || f.Type != reflect.TypeOf(metav1.TypeMeta{}) {
		return obj
	}
	kinds := false
	for i := range items.Len() {
		if !items.Index(i).FieldByIndex(f.Index).IsZero() {
			kinds = true
			break
		}
	}
	if !kinds {
		return obj
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	stripped := reflect.MakeSlice(items.Type(), items.Len(), items.Len())
	reflect.Copy(stripped, items)
	for i := range stripped.Len() {
		stripped.Index(i).FieldByIndex(f.Index).SetZero()
	}
	cp.Elem().FieldByName("Items").Set(stripped)
	return cp.Interface()
}
