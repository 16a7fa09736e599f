package endpoints

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// referenceFrame is a watch event as the stream wrote it before frames were cached: JSON
// through encoding/json's Encoder, protobuf through apimachinery's length-delimited framer.
func referenceFrame(t *testing.T, f wireFormat, et watch.EventType, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if f == wireJSON {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		type event struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.NewEncoder(&buf).Encode(event{Type: string(et), Object: raw}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	var env bytes.Buffer
	var raw []byte
	if err := protobuf.NewSerializer(nil, nil).Encode(obj, &env); err == nil {
		raw = env.Bytes()
	} else if raw, err = json.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	ev := metav1.WatchEvent{Type: string(et), Object: runtime.RawExtension{Raw: raw}}
	data, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protobuf.LengthDelimitedFramer.NewFrameWriter(&buf).Write(data); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testConfigMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns", ResourceVersion: fmt.Sprint(100 + i),
			Labels: map[string]string{"a": fmt.Sprint(i % 3)}},
		// Characters encoding/json escapes, and one that is not ASCII.
		Data: map[string]string{"html": "<a href=\"x\">&amp;</a>", "line": "\u2028é", "n": fmt.Sprint(i)},
	}
}

// The frames built for the cache are byte for byte what the stream wrote before, for every
// format and event type, objects with and without a protobuf form.
func TestWatchFrameMatchesEncoder(t *testing.T) {
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}},
		Rows:              []metav1.TableRow{{Cells: []any{"<x>"}}}}
	pom := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"a": "<&>"}}}
	// Objects whose lengths in the frame take one to four bytes.
	large := func(n int) runtime.Object {
		cm := testConfigMap(n)
		cm.Data["big"] = strings.Repeat("x", n)
		return cm
	}
	objects := map[string]runtime.Object{"configmap": testConfigMap(1), "table": table, "partial metadata": pom,
		"configmap 200": large(200), "configmap 70k": large(70 << 10), "configmap 3M": large(3 << 20),
		"status": &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}}
	for name, obj := range objects {
		for _, f := range []wireFormat{wireJSON, wireProto} {
			for _, et := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
				t.Run(fmt.Sprintf("%s/%d/%s", name, f, et), func(t *testing.T) {
					want := referenceFrame(t, f, et, obj)
					got, err := encodeEvent(f, et, obj)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("frame differs:\n got %q\nwant %q", got, want)
					}
					cached, err := newEncodingCache(1<<20, 100).frame(nil, f, et, obj)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(cached, want) {
						t.Fatalf("cached frame differs:\n got %q\nwant %q", cached, want)
					}
				})
			}
		}
	}
}

// A protobuf frame encoded for the cache keeps the object's envelope inside it, which a
// get of the same stored state then serves: the same bytes as encoding it anew.
func TestEncodingCacheProtoInFrame(t *testing.T) {
	store := new(int)
	c := newEncodingCache(1<<20, 100)
	cm := testConfigMap(7)
	cm.UID = "u7"
	fr, err := c.frame(store, wireProto, watch.Modified, cm)
	if err != nil {
		t.Fatal(err)
	}
	if want := referenceFrame(t, wireProto, watch.Modified, cm); !bytes.Equal(fr, want) {
		t.Fatalf("frame differs:\n got %q\nwant %q", fr, want)
	}
	var want bytes.Buffer
	if err := protoSerializer.Encode(cm, &want); err != nil {
		t.Fatal(err)
	}
	env, msg, ok := c.objectProto(store, cm, false)
	if !ok || !bytes.Equal(env, want.Bytes()) {
		t.Fatalf("envelope %q (ok %v), want %q", env, ok, want.Bytes())
	}
	if &env[0] != &fr[len(fr)-len(env)] {
		t.Error("the envelope is a second copy, not the frame's tail")
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(want.Bytes()[4:]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(msg, unk.Raw) {
		t.Errorf("object message %q, want %q", msg, unk.Raw)
	}
	if n, _ := c.stats(); n != 1 {
		t.Errorf("cache holds %d objects, want 1", n)
	}
}

// Many watchers asking at once for the frames of the same objects, in both formats and
// every event type, each get exactly the reference bytes, while the cache stays in its bound.
func TestEncodingCacheConcurrent(t *testing.T) {
	const objects, watchers = 50, 16
	objs := make([]runtime.Object, objects)
	want := make([][wireFormats][len(eventTypes)][]byte, objects)
	for i := range objs {
		objs[i] = testConfigMap(i)
		for f := range wireFormats {
			for ti, et := range eventTypes {
				want[i][f][ti] = referenceFrame(t, f, et, objs[i])
			}
		}
	}
	limit := 20 << 10 // about 10 objects' frames: the oldest are evicted while in use
	c := newEncodingCache(limit, objects)
	var wg sync.WaitGroup
	errs := make(chan error, watchers)
	for w := range watchers {
		wg.Go(func() {
			for round := range 3 {
				for i := range objs {
					f := wireFormat((w + i) % int(wireFormats))
					ti := (w + i + round) % len(eventTypes)
					got, err := c.frame(nil, f, eventTypes[ti], objs[i])
					if err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, want[i][f][ti]) {
						errs <- fmt.Errorf("watcher %d object %d format %d %s: wrong frame %q", w, i, f, eventTypes[ti], got)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, size := c.stats()
	if size > limit+4<<10 || n > objects {
		t.Errorf("cache holds %d objects in %d bytes, over its limit of %d", n, size, limit)
	}
	if n == 0 {
		t.Error("cache holds nothing")
	}
}

// The cache keeps one encoding per object and format: asking again returns the same bytes
// (not a new encoding), and a different object of equal content gets its own entry.
func TestEncodingCacheSharesEncoding(t *testing.T) {
	c := newEncodingCache(1<<20, 100)
	a, b := testConfigMap(1), testConfigMap(1)
	fa, _ := c.frame(nil, wireProto, watch.Added, a)
	fa2, _ := c.frame(nil, wireProto, watch.Added, a)
	if &fa[0] != &fa2[0] {
		t.Error("the same object and format was encoded twice")
	}
	fb, _ := c.frame(nil, wireProto, watch.Added, b)
	if &fa[0] == &fb[0] {
		t.Error("two objects share one entry")
	}
	if n, _ := c.stats(); n != 2 {
		t.Errorf("cache holds %d objects, want 2", n)
	}
	// Bookmarks and errors are one watcher's: never cached.
	if _, err := c.frame(nil, wireJSON, watch.Bookmark, testConfigMap(2)); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.stats(); n != 2 {
		t.Errorf("a bookmark was cached: %d objects", n)
	}
}

// The cache keeps at most its number of objects, the newest.
func TestEncodingCacheObjectBound(t *testing.T) {
	c := newEncodingCache(1<<20, 3)
	objs := make([]runtime.Object, 5)
	for i := range objs {
		objs[i] = testConfigMap(i)
		if _, err := c.frame(nil, wireJSON, watch.Modified, objs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := c.stats(); n != 3 {
		t.Fatalf("cache holds %d objects, want 3", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range objs {
		if _, ok := c.entries[objectKey{ptr: o}]; ok != (i >= 2) {
			t.Errorf("object %d cached: %v", i, ok)
		}
	}
}

// TestStoredKeyUnstructured: an unstructured object is named by what its accessors read.
func TestStoredKeyUnstructured(t *testing.T) {
	store := new(int)
	tests := []struct {
		name     string
		metadata any
	}{
		{"both", map[string]any{"uid": "u1", "resourceVersion": "7"}},
		{"no uid", map[string]any{"resourceVersion": "7"}},
		{"no resourceVersion", map[string]any{"uid": "u1"}},
		{"not strings", map[string]any{"uid": 1, "resourceVersion": int64(7)}},
		{"no metadata", nil},
		{"metadata not a map", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			if tt.metadata != nil {
				u.Object["metadata"] = tt.metadata
			}
			key, ok := storedKey(store, u)
			wantOK := u.GetUID() != "" && u.GetResourceVersion() != ""
			if ok != wantOK || ok && (key.uid != u.GetUID() || key.rv != u.GetResourceVersion() || key.store != any(store)) {
				t.Fatalf("storedKey = %+v, %v; the accessors read uid %q, resourceVersion %q", key, ok, u.GetUID(), u.GetResourceVersion())
			}
		})
	}
}

// TestUnstructuredJSON: an unstructured object's JSON, as a body and as json.Marshal's, is
// what encoding/json writes through its MarshalJSON.
func TestUnstructuredJSON(t *testing.T) {
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "bench.example.com/v1", "kind": "BenchObject",
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "<&>"}}, "data": map[string]any{"k": "v\u2028", "n": int64(3), "f": 1.5}}},
		{Object: nil},
		nil,
	}
	for _, u := range objs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(u); err != nil {
			t.Fatal(err)
		}
		body, err := encodeBodyJSON(u)
		if err != nil || string(body)+"\n" != buf.String() {
			t.Fatalf("encodeBodyJSON = %s, %v; want %s", body, err, buf.String())
		}
		want, _ := json.Marshal(u)
		if got, err := marshalJSON(u); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("marshalJSON = %s, %v; want %s", got, err, want)
		}
	}
}

// A built-in object is encoded into one buffer with the room asked for before it (the frame
// is then built in place, not copied).
func TestEncodeProtoRoom(t *testing.T) {
	cm := testConfigMap(3)
	buf, env, err := encodeProtoRoom(cm, protoFrameRoom)
	if err != nil {
		t.Fatal(err)
	}
	if buf == nil || len(buf) != protoFrameRoom+len(env) || &buf[protoFrameRoom] != &env[0] {
		t.Fatalf("envelope not in the buffer after %d bytes of room: buffer %d bytes, envelope %d", protoFrameRoom, len(buf), len(env))
	}
	var want bytes.Buffer
	if err := protoSerializer.Encode(cm, &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(env, want.Bytes()) {
		t.Errorf("envelope %q, want %q", env, want.Bytes())
	}
	if _, _, err := encodeProtoRoom(&metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}, 8); err == nil {
		t.Error("a Table encoded as protobuf")
	}
}

// The work of one watch event for a new object: its protobuf frame through the cache (a
// full-object watcher), and as PartialObjectMetadata (a metadata watcher, never cached).
// A created ConfigMap as kubectl's server-side field manager leaves it.
func BenchmarkWatchEvent(b *testing.B) {
	newObject := func(i int) *corev1.ConfigMap {
		cm := testConfigMap(i)
		cm.UID = types.UID(fmt.Sprintf("uid-%d", i))
		cm.CreationTimestamp = metav1.Now()
		cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", Time: &cm.CreationTimestamp, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:html":{},"f:line":{},"f:n":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`)}}}
		return cm
	}
	objects := func(b *testing.B) []*corev1.ConfigMap {
		objs := make([]*corev1.ConfigMap, b.N)
		for i := range objs {
			objs[i] = newObject(i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		return objs
	}
	b.Run("proto frame", func(b *testing.B) {
		c := newEncodingCache(32<<20, 16384)
		store := new(int)
		for _, obj := range objects(b) {
			if _, err := c.frame(store, wireProto, watch.Added, obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("partial metadata proto", func(b *testing.B) {
		for _, obj := range objects(b) {
			p, err := partialMetadata(obj)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := encodeEvent(wireProto, watch.Added, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A newer stored state of an object drops the cached encodings of the older one; an older
// one (a watcher behind) is cached beside the newer without dropping it; FIFO eviction
// forgets which state was the newest.
func TestEncodingCacheDropsSuperseded(t *testing.T) {
	c := newEncodingCache(1<<20, 3)
	store := new(int)
	state := func(uid string, rv int) *corev1.ConfigMap {
		cm := testConfigMap(rv)
		cm.UID, cm.ResourceVersion = types.UID(uid), fmt.Sprint(rv)
		return cm
	}
	cached := func(uid string, rv int) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.entries[objectKey{store: store, uid: types.UID(uid), rv: fmt.Sprint(rv)}]
		return ok
	}
	frame := func(obj runtime.Object) {
		t.Helper()
		if _, err := c.frame(store, wireJSON, watch.Modified, obj); err != nil {
			t.Fatal(err)
		}
	}
	frame(state("a", 5))
	frame(state("b", 6))
	frame(state("a", 7))
	if cached("a", 5) || !cached("a", 7) || !cached("b", 6) {
		t.Fatalf("after a@7: a@5 %v, a@7 %v, b@6 %v; want false, true, true", cached("a", 5), cached("a", 7), cached("b", 6))
	}
	if n, bytes := c.stats(); n != 2 || bytes <= 0 {
		t.Fatalf("cache holds %d objects, %d bytes; want 2", n, bytes)
	}
	frame(state("a", 6)) // a watcher behind
	if !cached("a", 6) || !cached("a", 7) {
		t.Fatalf("an older state dropped the newer: a@6 %v, a@7 %v", cached("a", 6), cached("a", 7))
	}
	// The object bound (3) evicts b@6, then a@7; a@6 then is the only state of a, and a
	// newer one still drops it.
	frame(state("c", 8))
	frame(state("d", 9))
	if cached("a", 7) || !cached("a", 6) {
		t.Fatalf("after eviction: a@7 %v, a@6 %v; want false, true", cached("a", 7), cached("a", 6))
	}
	frame(state("a", 11))
	if cached("a", 6) || !cached("a", 11) {
		t.Fatalf("after a@11: a@6 %v, a@11 %v; want false, true", cached("a", 6), cached("a", 11))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, e := range c.entries {
		total += e.size
	}
	if total != c.bytes {
		t.Fatalf("entries hold %d bytes, the cache counts %d", total, c.bytes)
	}
	if len(c.latest) > len(c.entries) {
		t.Fatalf("latest holds %d objects, the cache %d", len(c.latest), len(c.entries))
	}
}
