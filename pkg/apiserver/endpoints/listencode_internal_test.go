package endpoints

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// richConfigMap is a ConfigMap with what encoders treat specially: characters encoding/json
// escapes (with HTML escaping and without), one it always escapes, managedFields, a label
// selector's kind of labels, and its kind set (as the store sets it).
func richConfigMap(i int, rv string) *corev1.ConfigMap {
	cm := testConfigMap(i)
	cm.UID = types.UID(fmt.Sprintf("uid-%d", i))
	cm.ResourceVersion = rv
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl<&>", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:html":{}}}`)}}}
	if i%2 == 0 {
		cm.Data = map[string]string{"plain": "value", "n": fmt.Sprint(i)} // nothing to escape
		cm.BinaryData = map[string][]byte{"b": {0, 1, 2, 0xff}}
	}
	return cm
}

func configMapList(n int, rv string) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}}
	l.ResourceVersion = "777"
	for i := range n {
		l.Items = append(l.Items, *richConfigMap(i, rv))
	}
	return l
}

func customList(n int) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
		"metadata": map[string]any{"resourceVersion": "9", "continue": "abc"}}}
	for i := range n {
		l.Items = append(l.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i), "namespace": "ns", "uid": fmt.Sprintf("u-%d", i), "resourceVersion": "5"},
			"spec":     map[string]any{"html": "<b>&</b>", "line": "\u2028", "n": int64(i), "f": 1.5, "nested": []any{map[string]any{"z": true, "a": nil}}}}})
	}
	return l
}

// respond writes obj through writeObject (the reference: encoding the whole object) or
// through writeCached with its encodings from c, for the Accept header given.
func respond(t *testing.T, c *encodingCache, cached bool, accept string, obj runtime.Object) (string, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	if !cached {
		writeObject(rec, req, http.StatusOK, obj)
		return rec.Header().Get("Content-Type"), rec.Body.Bytes()
	}
	saved := objectEncodings
	objectEncodings = c
	defer func() { objectEncodings = saved }()
	s := &scope{storage: testStore, cachedEncodings: true}
	s.writeCached(rec, req, obj)
	if rec.Code != http.StatusOK {
		t.Fatalf("code %d", rec.Code)
	}
	return rec.Header().Get("Content-Type"), rec.Body.Bytes()
}

// fakeStore stands for the registry store objects are read through.
type fakeStore struct{ _ int }

func (*fakeStore) New() runtime.Object { return &corev1.ConfigMap{} }
func (*fakeStore) Kind() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("ConfigMap")
}

var testStore, otherStore = &fakeStore{}, &fakeStore{}

var accepts = []string{"", "application/json", protobufType, protobufType + ", application/json", "application/yaml",
	"application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	protobufType + ";as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"}

// Lists and gets written from the cached encodings are byte for byte what encoding the whole
// object writes (apimachinery's protobuf serializer, encoding/json), in every format asked
// for, for typed and custom (unstructured) objects, the first time and from the cache; what
// the cache does not serve (Table, metadata, YAML) is unchanged.
func TestCachedListMatchesEncoder(t *testing.T) {
	objects := map[string]func() runtime.Object{
		"configmaps":    func() runtime.Object { return configMapList(7, "100") },
		"one configmap": func() runtime.Object { return configMapList(1, "100") },
		"empty list":    func() runtime.Object { return configMapList(0, "100") },
		"custom":        func() runtime.Object { return customList(5) },
		"get configmap": func() runtime.Object { return richConfigMap(3, "100") },
		"get plain":     func() runtime.Object { return richConfigMap(4, "100") },
		"get custom":    func() runtime.Object { return &customList(1).Items[0] },
		"continue pages": func() runtime.Object {
			l := configMapList(3, "5")
			l.Continue = "tok<&>"
			n := int64(12)
			l.RemainingItemCount = &n
			return l
		},
		"pods": func() runtime.Object {
			p := corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pu", ResourceVersion: "3",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "ru"}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Args: []string{"<&>"}}}}}
			return &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{p, p}}
		},
	}
	for name, make := range objects {
		for _, accept := range accepts {
			t.Run(name+"/"+accept, func(t *testing.T) {
				wantCT, want := respond(t, nil, false, accept, make())
				c := newEncodingCache(1<<20, 1000)
				for round := range 3 { // fills the cache, then from it, then again
					ct, got := respond(t, c, true, accept, make())
					if ct != wantCT || !bytes.Equal(got, want) {
						t.Fatalf("round %d: %s\n%q\nwant %s\n%q", round, ct, got, wantCT, want)
					}
				}
				served := !strings.Contains(accept, "as=") && !strings.Contains(accept, "yaml") && name != "empty list"
				if n, _ := c.stats(); (n > 0) != served {
					t.Fatalf("%d objects cached; served from the cache: %v", n, served)
				}
				// Watch frames of the same objects share their bytes with the list's.
				if l, err := meta.ExtractList(make()); err == nil {
					for _, it := range l {
						for _, f := range []wireFormat{wireJSON, wireProto} {
							fr, err := c.frame(testStore, f, "ADDED", it)
							if err != nil {
								t.Fatal(err)
							}
							if ref := referenceFrame(t, f, "ADDED", it); !bytes.Equal(fr, ref) {
								t.Fatalf("frame %q, want %q", fr, ref)
							}
						}
					}
				}
			})
		}
	}
}

// Every list kind the server serves splices as its encoder writes it: items carrying only
// metadata, and the list's own metadata.
func TestCachedListEveryKind(t *testing.T) {
	n := 0
	for gvk, typ := range registry.Scheme.AllKnownTypes() {
		if !strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		list, ok := reflect.New(typ).Interface().(runtime.Object)
		if !ok || !meta.IsListType(list) {
			continue
		}
		items := reflect.ValueOf(list).Elem().FieldByName("Items")
		if !items.IsValid() || items.Kind() != reflect.Slice || items.Type().Elem().Kind() != reflect.Struct {
			continue
		}
		itemType := items.Type().Elem()
		var objs []runtime.Object
		for i := range 3 {
			it, ok := reflect.New(itemType).Interface().(runtime.Object)
			if !ok {
				break
			}
			a, err := meta.Accessor(it)
			if err != nil {
				break
			}
			a.SetName(fmt.Sprintf("o-%d", i))
			a.SetUID(types.UID(fmt.Sprintf("%s-%d", gvk.Kind, i)))
			a.SetResourceVersion(fmt.Sprint(10 + i))
			a.SetLabels(map[string]string{"k": "<v>"})
			objs = append(objs, it)
		}
		if len(objs) != 3 || meta.SetList(list, objs) != nil {
			continue
		}
		list.GetObjectKind().SetGroupVersionKind(gvk)
		if la, err := meta.ListAccessor(list); err == nil {
			la.SetResourceVersion("42")
		}
		n++
		c := newEncodingCache(1<<20, 1000)
		for _, proto := range []bool{false, true} {
			got, isProto, err := encodeWholeList(c, testStore, proto, list)
			if err != nil {
				t.Errorf("%s proto=%v: %v", gvk, proto, err)
				continue
			}
			var want []byte
			if isProto {
				want, err = encodeProto(list)
			} else {
				want, err = encodeBodyJSON(list)
				want = append(want, '\n')
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s proto=%v: spliced list differs (%v)", gvk, proto, err)
			}
			if _, err := encodeProto(list); proto && !isProto && err == nil {
				t.Errorf("%s: JSON where protobuf was asked for and can be written", gvk)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d list kinds checked", n)
	}
}

// An object updated (a new resourceVersion) reads with its new content; the old state's
// encodings are not served for it.
func TestCachedEncodingFollowsUpdates(t *testing.T) {
	c := newEncodingCache(1<<20, 1000)
	old := configMapList(3, "100")
	if _, _, err := encodeWholeList(c, testStore, true, old); err != nil {
		t.Fatal(err)
	}
	updated := configMapList(3, "100")
	updated.Items[1].ResourceVersion = "101"
	updated.Items[1].Data = map[string]string{"new": "value"}
	for _, proto := range []bool{true, false} {
		got, _, err := encodeWholeList(c, testStore, proto, updated)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := encodeProto(updated)
		if !proto {
			want, _ = encodeBodyJSON(listWithoutItemKinds(updated))
			want = append(want, '\n')
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("proto=%v: list after an update differs", proto)
		}
		if !bytes.Contains(got, []byte("new")) {
			t.Fatal("the update is not in the list")
		}
	}
	// The same object through another store is its own entry.
	before, _ := c.stats()
	if _, _, err := encodeWholeList(c, otherStore, false, updated); err != nil {
		t.Fatal(err)
	}
	if after, _ := c.stats(); after != before+3 {
		t.Fatalf("another store's reads share entries: %d -> %d", before, after)
	}
}

// The cache stays within its bounds of bytes and objects while lists larger than it are
// served, evicting the oldest; the lists stay right.
func TestCachedEncodingBound(t *testing.T) {
	list := configMapList(100, "100")
	want, _ := encodeProto(list)
	for _, tc := range []struct {
		name         string
		limit, count int
	}{{"bytes", 20 << 10, 1000}, {"objects", 1 << 20, 10}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newEncodingCache(tc.limit, tc.count)
			for range 3 {
				got, _, err := encodeWholeList(c, testStore, true, list)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatal("list differs")
				}
				n, size := c.stats()
				if n > tc.count || size > tc.limit+4<<10 {
					t.Fatalf("cache holds %d objects in %d bytes, over %d / %d", n, size, tc.count, tc.limit)
				}
				if n == 0 {
					t.Fatal("cache holds nothing")
				}
			}
		})
	}
}

// Lists, gets and watch frames of objects being replaced by newer versions, all at once:
// every reader gets exactly the reference bytes (run with -race).
func TestCachedEncodingConcurrent(t *testing.T) {
	c := newEncodingCache(64<<10, 200)
	const versions = 20
	lists := make([]*corev1.ConfigMapList, versions)
	wantProto := make([][]byte, versions)
	wantJSON := make([][]byte, versions)
	for v := range versions {
		lists[v] = configMapList(10, fmt.Sprint(100+v))
		wantProto[v], _ = encodeProto(lists[v])
		wantJSON[v], _ = encodeBodyJSON(listWithoutItemKinds(lists[v]))
		wantJSON[v] = append(wantJSON[v], '\n')
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Go(func() {
			for i := range 3 * versions {
				v := (i + w) % versions
				proto := (i+w)%2 == 0
				got, _, err := encodeWholeList(c, testStore, proto, lists[v])
				want := wantJSON[v]
				if proto {
					want = wantProto[v]
				}
				if err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("reader %d version %d proto=%v: wrong list (%v)", w, v, proto, err)
					return
				}
				it := &lists[v].Items[i%10]
				if _, err := c.frame(testStore, wireFormat(i%2), "MODIFIED", it); err != nil {
					errs <- err
					return
				}
				if body, _, err := encodeObject(c, testStore, !proto, it); err != nil || len(body) == 0 {
					errs <- fmt.Errorf("get: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The server's cost of writing a list of 100 ConfigMaps: encoding the whole list, against
// splicing the items' cached encodings; and of 1,000 from their cached encodings into a
// writer that keeps nothing (no recorder's buffer growing).
func BenchmarkListResponse(b *testing.B) {
	list, large := configMapList(100, "100"), configMapList(1000, "100")
	for _, accept := range []string{protobufType, "application/json"} {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Header.Set("Accept", accept)
		b.Run("encode/"+accept, func(b *testing.B) {
			for b.Loop() {
				writeObject(httptest.NewRecorder(), req, http.StatusOK, list)
			}
		})
		b.Run("cached/"+accept, func(b *testing.B) {
			s := &scope{storage: testStore, cachedEncodings: true}
			for b.Loop() {
				s.writeCached(httptest.NewRecorder(), req, list)
			}
		})
		b.Run("cached-1000/"+accept, func(b *testing.B) {
			s := &scope{storage: testStore, cachedEncodings: true}
			w := &discardResponse{h: http.Header{}}
			for b.Loop() {
				s.writeCached(w, req, large)
			}
		})
	}
}

// discardResponse keeps nothing written to it: the server's own cost of a response, without
// a recorder's buffer growing.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

// encodeWholeList is encodeList of a list with its items, the body as streamed.
func encodeWholeList(c *encodingCache, store any, proto bool, list runtime.Object) ([]byte, bool, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, false, err
	}
	b, isProto, err := encodeList(c, store, false, proto, list, items, true)
	if err != nil {
		return nil, false, err
	}
	return streamed(b), isProto, nil
}

// streamed is what b's WriteTo writes, checked against its Len and Bytes.
func streamed(b *listBody) []byte {
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	if err != nil || int(n) != b.Len() || buf.Len() != b.Len() || !bytes.Equal(buf.Bytes(), b.Bytes()) {
		panic(fmt.Sprintf("listBody: WriteTo wrote %d bytes (%v), Len %d, Bytes the same %v", n, err, b.Len(), bytes.Equal(buf.Bytes(), b.Bytes())))
	}
	return buf.Bytes()
}

// A list given as its metadata and the items apart (the watch cache's own objects, not
// copied into it) is spliced only once its form was checked against a whole list's
// encoding; then it gives the whole list's bytes, every time.
func TestEncodeListItemsApart(t *testing.T) {
	c := newEncodingCache(1<<20, 1000)
	for _, proto := range []bool{true, false} {
		list := configMapList(5, "100")
		items, _ := meta.ExtractList(list)
		head := list.DeepCopy()
		head.Items = nil
		form := listForm{reflect.TypeOf(list), proto}
		listForms.Delete(form)
		if _, _, err := encodeList(c, testStore, true, proto, head, items, false); err != errNotSpliced {
			t.Fatalf("proto=%v: an unchecked form was spliced (%v)", proto, err)
		}
		if _, _, err := encodeWholeList(c, testStore, proto, configMapList(40, "100")); err != nil {
			t.Fatal(err)
		}
		want, _, err := encodeWholeList(nil, testStore, proto, list)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			b, isProto, err := encodeList(c, testStore, true, proto, head, items, false)
			if err != nil || isProto != proto {
				t.Fatalf("proto=%v: %v, protobuf %v", proto, err, isProto)
			}
			if !bytes.Equal(streamed(b), want) {
				t.Fatalf("proto=%v: list of items apart differs from the whole list", proto)
			}
		}
	}
}

// TestEncodeListAliases: the watch cache's own objects find their entries by identity once
// listed: the same bytes as by stored state, one alias per entry (a new object for the same
// state takes it over), and none left behind by an evicted entry.
func TestEncodeListAliases(t *testing.T) {
	c := newEncodingCache(1<<20, 8)
	list := configMapList(5, "100")
	items, _ := meta.ExtractList(list)
	head := list.DeepCopy()
	head.Items = nil
	if _, _, err := encodeWholeList(c, testStore, false, list); err != nil { // checks the form
		t.Fatal(err)
	}
	want, _, err := encodeWholeList(nil, testStore, false, list)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b, _, err := encodeList(c, testStore, true, false, head, items, false)
		if err != nil || !bytes.Equal(streamed(b), want) {
			t.Fatalf("spliced by alias: %v, same bytes %v", err, err == nil && bytes.Equal(streamed(b), want))
		}
	}
	aliases := func() map[aliasKey]*encodings {
		c.mu.Lock()
		defer c.mu.Unlock()
		return maps.Clone(c.aliases)
	}
	a := aliases()
	if len(a) != len(items) {
		t.Fatalf("%d aliases for %d items", len(a), len(items))
	}
	for _, it := range items {
		key, _ := storedKey(testStore, it)
		c.mu.Lock()
		e := c.entries[key]
		c.mu.Unlock()
		if e == nil || a[aliasKey{testStore, it}] != e {
			t.Fatalf("the alias of %v is not its entry", key)
		}
	}
	// A copy of an item (the cache's object for that state replaced by an equal one) takes
	// the entry's alias over.
	cp := items[0].DeepCopyObject()
	if _, err := c.objectBody(testStore, cp, true); err != nil {
		t.Fatal(err)
	}
	a = aliases()
	if _, old := a[aliasKey{testStore, items[0]}]; old || a[aliasKey{testStore, cp}] == nil || len(a) != len(items) {
		t.Fatalf("after a second object for one state: %d aliases, old kept %v", len(a), old)
	}
	// More objects than the cache keeps: the evicted entries' aliases go with them.
	more := configMapList(20, "200")
	moreItems, _ := meta.ExtractList(more)
	for _, it := range moreItems {
		if _, err := c.objectBody(testStore, it, true); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.aliases) > len(c.entries) {
		t.Fatalf("%d aliases for %d entries", len(c.aliases), len(c.entries))
	}
	for k, e := range c.aliases {
		if e.evicted || e.alias != k {
			t.Fatalf("alias of an evicted entry, or not its own: %+v", e)
		}
	}
}

// TestListItemsWithoutKinds: a typed list's JSON names the kind once, on the list, as
// kube-apiserver's (its items are converted from internal types, with no TypeMeta), whether
// spliced from the items' cached bodies (which a get sends with their kind) or encoded
// whole; the list given is not changed. Custom resources' items and PartialObjectMetadata
// items keep theirs, as upstream's.
func TestListItemsWithoutKinds(t *testing.T) {
	list := configMapList(3, "100")
	if list.Items[0].Kind != "ConfigMap" {
		t.Fatalf("the test's items have no kind: %+v", list.Items[0].TypeMeta)
	}
	bare := list.DeepCopy()
	for i := range bare.Items {
		bare.Items[i].TypeMeta = metav1.TypeMeta{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(bare); err != nil {
		t.Fatal(err)
	}
	want := buf.Bytes()
	c := newEncodingCache(1<<20, 1000)
	items, _ := meta.ExtractList(list)
	for _, it := range items {
		if _, _, err := encodeObject(c, testStore, false, it); err != nil { // a get's body first
			t.Fatal(err)
		}
	}
	whole, _, err := encodeWholeList(c, testStore, false, list)
	if err != nil || !bytes.Equal(whole, want) {
		t.Fatalf("whole list (%v):\n%s\nwant\n%s", err, whole, want)
	}
	head := list.DeepCopy()
	head.Items = nil
	for _, shared := range []bool{false, true} {
		b, _, err := encodeList(c, testStore, shared, false, head, items, false)
		if err != nil || !bytes.Equal(streamed(b), want) {
			t.Fatalf("spliced, shared %v (%v):\n%s", shared, err, b.Bytes())
		}
	}
	if list.Items[0].Kind != "ConfigMap" {
		t.Fatal("encoding the list cleared its own items' kind")
	}
	rec := httptest.NewRecorder()
	writeObject(rec, httptest.NewRequest(http.MethodGet, "/x", nil), http.StatusOK, list)
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("writeObject:\n%s", rec.Body.Bytes())
	}
	// Kept: custom items, PartialObjectMetadata items.
	custom := customList(2)
	if got := listWithoutItemKinds(custom); got != any(custom) {
		t.Fatal("a custom list was copied")
	}
	partial := &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}}}}
	if got := listWithoutItemKinds(partial); got != any(partial) {
		t.Fatal("a PartialObjectMetadataList was copied")
	}
}

func TestAfterTypeMeta(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	dep := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for _, tt := range []struct {
		body string
		gvk  schema.GroupVersionKind
		rest string
		ok   bool
	}{
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}`, cm, `"metadata":{}}`, true},
		{`{"kind":"Deployment","apiVersion":"apps/v1"}`, dep, `}`, true},
		{`{"kind":"Deployment","apiVersion":"v1","x":1}`, dep, "", false},
		{`{"apiVersion":"v1","kind":"ConfigMap"}`, cm, "", false},
		{`{"metadata":{}}`, cm, "", false},
		{`{"kind":"ConfigMap","apiVersion":"v1"`, cm, "", false},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}`, schema.GroupVersionKind{}, "", false},
	} {
		rest, ok := afterTypeMeta([]byte(tt.body), tt.gvk)
		if ok != tt.ok || string(rest) != tt.rest {
			t.Errorf("afterTypeMeta(%s, %v) = %q, %v; want %q, %v", tt.body, tt.gvk, rest, ok, tt.rest, tt.ok)
		}
	}
}
