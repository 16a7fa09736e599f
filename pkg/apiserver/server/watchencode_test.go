package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// rawEvent is one watch event as it came off the wire: its type and its object's bytes.
type rawEvent struct {
	Type   string
	Object []byte
}

// readWatch opens a watch of configmaps in ns with the given Accept header and query, and
// returns the first n events' raw bytes.
func readWatch(ctx context.Context, hc *http.Client, host, ns, accept string, q url.Values, n int) ([]rawEvent, error) {
	q.Set("watch", "true")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/api/v1/namespaces/"+ns+"/configmaps?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("watch %s: %s: %s", accept, resp.Status, body)
	}
	var out []rawEvent
	if strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf") {
		for len(out) < n {
			var size [4]byte
			if _, err := io.ReadFull(resp.Body, size[:]); err != nil {
				return out, err
			}
			frame := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(resp.Body, frame); err != nil {
				return out, err
			}
			var ev metav1.WatchEvent
			if err := ev.Unmarshal(frame); err != nil {
				return out, err
			}
			out = append(out, rawEvent{Type: ev.Type, Object: ev.Object.Raw})
		}
		return out, nil
	}
	dec := json.NewDecoder(resp.Body)
	for len(out) < n {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return out, err
		}
		out = append(out, rawEvent{Type: ev.Type, Object: ev.Object})
	}
	return out, nil
}

// Watchers of one resource that ask for different media types, selectors and
// transformations, all served from the shared per-event encodings, each get exactly their
// own bytes: the right events for their selector, each object encoded in their format and
// byte for byte what encoding that very object gives, and a watcher asking for
// PartialObjectMetadata or a Table never gets a full object another watcher's encoding left
// behind.
func TestWatchEncodingPerWatcher(t *testing.T) {
	s := servertest.New(t, nil)
	rc := servertest.RestConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(rc)
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNamespace(t, cs, "enc")
	cms := cs.CoreV1().ConfigMaps("enc")
	start, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	const (
		protoType = "application/vnd.kubernetes.protobuf"
		meta      = ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	)
	type watcher struct {
		name, accept string
		query        url.Values
		want         []string // "TYPE name", in order
	}
	all := []string{"ADDED a", "ADDED b", "MODIFIED a", "DELETED b"}
	watchers := []watcher{
		{"json label a=1", "application/json", url.Values{"labelSelector": {"a=1"}}, []string{"ADDED a", "DELETED a"}},
		{"protobuf", protoType, url.Values{}, all},
		{"protobuf name=b", protoType, url.Values{"fieldSelector": {"metadata.name=b"}}, []string{"ADDED b", "DELETED b"}},
		{"json", "application/json", url.Values{}, all},
		{"json metadata", "application/json" + meta, url.Values{}, all},
		{"protobuf metadata", protoType + meta, url.Values{}, all},
		{"table", "application/json;as=Table;g=meta.k8s.io;v=v1", url.Values{}, all},
	}
	got := make([][]rawEvent, len(watchers))
	errs := make([]error, len(watchers))
	var wg sync.WaitGroup
	for i, w := range watchers {
		w.query.Set("resourceVersion", start.ResourceVersion)
		wg.Go(func() { got[i], errs[i] = readWatch(ctx, hc, rc.Host, "enc", w.accept, w.query, len(w.want)) })
	}

	// Each version of each object, by resourceVersion, as the writes returned it.
	versions := map[string]*corev1.ConfigMap{}
	keep := func(cm *corev1.ConfigMap, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		versions[cm.ResourceVersion] = cm
	}
	keep(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"a": "1"}}, Data: map[string]string{"k": "<v&>"}}, metav1.CreateOptions{}))
	keep(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"a": "2"}}, Data: map[string]string{"k": "b"}}, metav1.CreateOptions{}))
	a, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Labels["a"], a.Data["k"] = "2", "changed"
	keep(cms.Update(ctx, a, metav1.UpdateOptions{}))
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	metav1.AddMetaToScheme(scheme)
	proto := protobuf.NewSerializer(scheme, scheme)
	// decode decodes raw as the watcher's format and checks that encoding the result gives
	// raw again: the bytes are that object's own encoding, nothing left over from another.
	decode := func(w watcher, raw []byte, into runtime.Object) error {
		if strings.HasPrefix(w.accept, protoType) {
			if _, _, err := proto.Decode(raw, nil, into); err != nil {
				return err
			}
			var again bytes.Buffer
			if err := proto.Encode(into, &again); err != nil {
				return err
			}
			if !bytes.Equal(again.Bytes(), raw) {
				return fmt.Errorf("protobuf bytes are not the object's encoding")
			}
			return nil
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return err
		}
		again, err := json.Marshal(into)
		if err != nil {
			return err
		}
		if !bytes.Equal(again, raw) {
			return fmt.Errorf("JSON bytes are not the object's encoding:\n got %s\nwant %s", raw, again)
		}
		return nil
	}
	for i, w := range watchers {
		t.Run(w.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("after %d events: %v", len(got[i]), errs[i])
			}
			for j, ev := range got[i] {
				var kind struct {
					Kind string `json:"kind"`
				}
				var name, rv string
				switch {
				case w.name == "table":
					var tab metav1.Table
					if err := decode(w, ev.Object, &tab); err != nil {
						t.Fatalf("event %d: %v", j, err)
					}
					if tab.Kind != "Table" || len(tab.Rows) != 1 {
						t.Fatalf("event %d: not a one-row Table: %s", j, ev.Object)
					}
					_ = json.Unmarshal(tab.Rows[0].Object.Raw, &kind)
					var pm metav1.PartialObjectMetadata
					_ = json.Unmarshal(tab.Rows[0].Object.Raw, &pm)
					name, rv = pm.Name, pm.ResourceVersion
					if kind.Kind != "PartialObjectMetadata" {
						t.Errorf("event %d: the row's object is a %q, want PartialObjectMetadata (includeObject=Metadata)", j, kind.Kind)
					}
				case strings.HasSuffix(w.accept, meta):
					var pm metav1.PartialObjectMetadata
					if err := decode(w, ev.Object, &pm); err != nil {
						t.Fatalf("event %d: %v", j, err)
					}
					if pm.Kind != "PartialObjectMetadata" || bytes.Contains(ev.Object, []byte("changed")) || bytes.Contains(ev.Object, []byte("<v&>")) {
						t.Fatalf("event %d: not PartialObjectMetadata alone: %q", j, ev.Object)
					}
					name, rv = pm.Name, pm.ResourceVersion
					if want := versions[rv]; want != nil && !equality.Semantic.DeepEqual(pm.ObjectMeta, want.ObjectMeta) {
						t.Errorf("event %d: metadata\n got %+v\nwant %+v", j, pm.ObjectMeta, want.ObjectMeta)
					}
				default:
					var cm corev1.ConfigMap
					if err := decode(w, ev.Object, &cm); err != nil {
						t.Fatalf("event %d: %v", j, err)
					}
					if cm.Kind != "ConfigMap" {
						t.Fatalf("event %d: a %q, want ConfigMap", j, cm.Kind)
					}
					name, rv = cm.Name, cm.ResourceVersion
					if want := versions[rv]; want != nil && !equality.Semantic.DeepEqual(cm.Data, want.Data) {
						t.Errorf("event %d: data %v, want %v", j, cm.Data, want.Data)
					}
				}
				if g := ev.Type + " " + name; g != w.want[j] {
					t.Errorf("event %d: %s, want %s", j, g, w.want[j])
				}
				if ev.Type != "DELETED" && versions[rv] == nil {
					t.Errorf("event %d (%s %s): resourceVersion %s is none that a write returned", j, ev.Type, name, rv)
				}
			}
		})
	}
}
