package server_test

import (
	"bytes"
	"context"
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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Lists and gets served from the objects' cached encodings while the objects change under
// them (run with -race): through a real server with its watch cache, every body is byte for
// byte the encoding of what it holds (decoded and encoded again by apimachinery and
// encoding/json), one resourceVersion of an object always reads the same content, selectors
// and pages give the right items, and once the writes are done a list shows every object's
// last write, for ConfigMaps (protobuf and JSON) and a custom resource (JSON).
func TestCachedListEncodingUnderUpdates(t *testing.T) {
	s := servertest.New(t, nil)
	rc := servertest.RestConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createNamespace(t, cs, "lenc")
	createCRD(t, dyn, cronTabCRD)
	waitServed(t, dyn, cronTabs)

	const objects, writes = 12, 8
	cms := cs.CoreV1().ConfigMaps("lenc")
	cts := dyn.Resource(cronTabs).Namespace("lenc")
	for i := range objects {
		name := fmt.Sprintf("o-%02d", i)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"mod": fmt.Sprint(i % 3)}},
			Data: map[string]string{"gen": "0", "html": "<a>&amp;</a>"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cts.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "stable.example.com/v1", "kind": "CronTab",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"mod": fmt.Sprint(i % 3)}},
			"spec":     map[string]any{"image": "gen-0 <&>"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	proto := protobuf.NewSerializer(scheme, scheme)
	// decode checks that body is the encoding of what it decodes to, and returns its items'
	// generation by name and resourceVersion.
	decode := func(resource, accept string, body []byte) (map[string]string, string, error) {
		var list runtime.Object
		var again []byte
		switch {
		case strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf"):
			l := &corev1.ConfigMapList{}
			if _, _, err := proto.Decode(body, nil, l); err != nil {
				return nil, "", err
			}
			var buf bytes.Buffer
			if err := proto.Encode(l, &buf); err != nil {
				return nil, "", err
			}
			list, again = l, buf.Bytes()
		default:
			var l runtime.Object = &corev1.ConfigMapList{}
			if resource == "crontabs" {
				l = &unstructured.UnstructuredList{}
			}
			if err := json.Unmarshal(body, l); err != nil {
				return nil, "", err
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(l); err != nil {
				return nil, "", err
			}
			list, again = l, buf.Bytes()
		}
		if !bytes.Equal(again, body) {
			return nil, "", fmt.Errorf("%s %s: the body is not its content's encoding:\n got %s\nwant %s", resource, accept, body, again)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, "", err
		}
		gens := map[string]string{}
		for _, it := range items {
			a, _ := meta.Accessor(it)
			var gen string
			switch o := it.(type) {
			case *corev1.ConfigMap:
				gen = o.Data["gen"]
			case *unstructured.Unstructured:
				gen, _, _ = unstructured.NestedString(o.Object, "spec", "image")
				if cron, _, _ := unstructured.NestedString(o.Object, "spec", "cronSpec"); cron != "*/5 * * * *" {
					return nil, "", fmt.Errorf("%s: not defaulted on read: %v", a.GetName(), o.Object)
				}
			}
			gens[a.GetName()+"@"+a.GetResourceVersion()] = gen
		}
		la, _ := meta.ListAccessor(list)
		return gens, la.GetContinue(), nil
	}
	get := func(resource, accept string, q url.Values) ([]byte, error) {
		path := "/api/v1/namespaces/lenc/configmaps"
		if resource == "crontabs" {
			path = "/apis/stable.example.com/v1/namespaces/lenc/crontabs"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Host+path+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", accept)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", resp.Status, body)
		}
		return body, err
	}

	type read struct {
		resource, accept string
		query            url.Values
		want             int // items when not paged; 0: paged (limit 5)
	}
	reads := []read{
		{"configmaps", "application/vnd.kubernetes.protobuf", url.Values{"resourceVersion": {"0"}}, objects},
		{"configmaps", "application/json", url.Values{}, objects},
		{"configmaps", "application/vnd.kubernetes.protobuf", url.Values{"labelSelector": {"mod=1"}}, objects / 3},
		{"configmaps", "application/json", url.Values{"fieldSelector": {"metadata.name=o-03"}, "resourceVersion": {"0"}}, 1},
		{"configmaps", "application/vnd.kubernetes.protobuf", url.Values{"limit": {"5"}}, 0},
		{"crontabs", "application/json", url.Values{"resourceVersion": {"0"}}, objects},
		{"crontabs", "application/json", url.Values{"labelSelector": {"mod=2"}}, objects / 3},
		{"crontabs", "application/json", url.Values{"limit": {"5"}}, 0},
	}
	var mu sync.Mutex
	seen := map[string]string{} // resource/name@rv -> generation
	record := func(resource string, gens map[string]string) error {
		mu.Lock()
		defer mu.Unlock()
		for k, g := range gens {
			if old, ok := seen[resource+"/"+k]; ok && old != g {
				return fmt.Errorf("%s/%s read as %q and as %q", resource, k, old, g)
			}
			seen[resource+"/"+k] = g
		}
		return nil
	}
	// list reads all of r (following pages) and checks it.
	list := func(r read) (map[string]string, error) {
		all := map[string]string{}
		q := url.Values{}
		for k, v := range r.query {
			q[k] = v
		}
		for {
			body, err := get(r.resource, r.accept, q)
			if err != nil {
				return nil, err
			}
			gens, cont, err := decode(r.resource, r.accept, body)
			if err != nil {
				return nil, err
			}
			if err := record(r.resource, gens); err != nil {
				return nil, err
			}
			for k, g := range gens {
				all[k] = g
			}
			if cont == "" {
				break
			}
			q.Set("continue", cont)
		}
		want := r.want
		if want == 0 {
			want = objects
		}
		if len(all) != want {
			return nil, fmt.Errorf("%s %s %v: %d items, want %d", r.resource, r.accept, r.query, len(all), want)
		}
		return all, nil
	}

	// Consistent lists first: the caches have every object from then on, so that lists at
	// resourceVersion=0 (any state at least as new) have them too.
	for _, r := range []read{{"configmaps", "application/json", url.Values{}, objects}, {"crontabs", "application/json", url.Values{}, objects}} {
		if _, err := list(r); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var writers sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 2 {
		writers.Go(func() {
			for gen := 1; gen <= writes; gen++ {
				for i := w; i < objects; i += 2 {
					name := fmt.Sprintf("o-%02d", i)
					if _, err := cms.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"data":{"gen":"%d"}}`, gen), metav1.PatchOptions{}); err != nil {
						errs <- err
						return
					}
					if _, err := cts.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"image":"gen-%d <&>"}}`, gen), metav1.PatchOptions{}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	var readers sync.WaitGroup
	for _, r := range reads {
		readers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					if n > 0 {
						return
					}
				default:
				}
				if _, err := list(r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// After the writes, a consistent list shows every object's last write.
	for _, r := range []read{{"configmaps", "application/vnd.kubernetes.protobuf", url.Values{}, objects},
		{"configmaps", "application/json", url.Values{}, objects}, {"crontabs", "application/json", url.Values{}, objects}} {
		all, err := list(r)
		if err != nil {
			t.Fatal(err)
		}
		for k, g := range all {
			if g != fmt.Sprint(writes) && g != fmt.Sprintf("gen-%d <&>", writes) {
				t.Errorf("%s %s: %s is at %q after the writes", r.resource, r.accept, k, g)
			}
		}
	}
	// Gets, from the cache (resourceVersion=0) and from etcd, are their content's encoding
	// and show the last write too.
	for _, path := range []string{"/api/v1/namespaces/lenc/configmaps/o-01", "/apis/stable.example.com/v1/namespaces/lenc/crontabs/o-01"} {
		for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
			for _, rv := range []string{"0", ""} {
				body, err := cs.CoreV1().RESTClient().Get().AbsPath(path).Param("resourceVersion", rv).SetHeader("Accept", accept).DoRaw(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var obj runtime.Object
				var again bytes.Buffer
				if strings.HasPrefix(accept, "application/vnd") && strings.Contains(path, "configmaps") {
					cm := &corev1.ConfigMap{}
					if _, _, err := proto.Decode(body, nil, cm); err != nil {
						t.Fatal(err)
					}
					if err := proto.Encode(cm, &again); err != nil {
						t.Fatal(err)
					}
					obj = cm
				} else {
					var o runtime.Object = &corev1.ConfigMap{}
					if strings.Contains(path, "crontabs") {
						o = &unstructured.Unstructured{}
					}
					if err := json.Unmarshal(body, o); err != nil {
						t.Fatal(err)
					}
					enc := json.NewEncoder(&again)
					enc.SetEscapeHTML(false)
					if err := enc.Encode(o); err != nil {
						t.Fatal(err)
					}
					obj = o
				}
				if !bytes.Equal(again.Bytes(), body) {
					t.Fatalf("get %s %s rv=%q: the body is not its content's encoding:\n got %s\nwant %s", path, accept, rv, body, again.Bytes())
				}
				last := fmt.Sprint(writes)
				var gen string
				if cm, ok := obj.(*corev1.ConfigMap); ok {
					gen = cm.Data["gen"]
				} else {
					gen, _, _ = unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "image")
					last = fmt.Sprintf("gen-%d <&>", writes)
				}
				if gen != last {
					t.Errorf("get %s %s rv=%q: at %q after the writes", path, accept, rv, gen)
				}
			}
		}
	}
	if len(seen) < 2*objects {
		t.Fatalf("only %d object versions read", len(seen))
	}
}
