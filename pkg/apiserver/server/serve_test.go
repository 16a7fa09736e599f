package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestDiscovery(t *testing.T) {
	s := servertest.New(t, nil)
	e := newHTTPEnv(t, s)

	t.Run("legacy", func(t *testing.T) {
		for path, want := range map[string]string{
			"/api":                         `"versions":["v1"]`,
			"/apis":                        `"name":"apps"`,
			"/api/v1":                      `"name":"pods/status"`,
			"/apis/apps":                   `"preferredVersion":{"groupVersion":"apps/v1"`,
			"/apis/apps/v1":                `"name":"deployments/scale"`,
			"/apis/coordination.k8s.io/v1": `"name":"leases"`,
		} {
			resp, body := e.do(e.admin, "GET", path, "", nil, nil)
			if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
		}
	})

	for _, v := range []string{"v2", "v2beta1"} {
		t.Run("aggregated "+v, func(t *testing.T) {
			accept := "application/json;g=apidiscovery.k8s.io;v=" + v + ";as=APIGroupDiscoveryList,application/json"
			resp, body := e.do(e.admin, "GET", "/apis", "", nil, map[string]string{"Accept": accept})
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v="+v+";as=APIGroupDiscoveryList" {
				t.Fatalf("content type %q", ct)
			}
			var list apidiscoveryv2.APIGroupDiscoveryList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			// Every served group once: those of the built-in kinds, events.k8s.io (a view),
			// authentication.k8s.io and authorization.k8s.io (reviews, not stored).
			want := map[string]bool{"events.k8s.io": true, "authentication.k8s.io": true, "authorization.k8s.io": true}
			for _, k := range controlplane.Kinds() {
				if k.Group != "" {
					want[k.Group] = true
				}
			}
			got := map[string]bool{}
			for _, g := range list.Items {
				got[g.Name] = true
			}
			if list.APIVersion != "apidiscovery.k8s.io/"+v || len(list.Items) != len(want) || !maps.Equal(got, want) {
				t.Fatalf("groups %v, want %v: %s", got, want, body)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			resp, _ = e.do(e.admin, "GET", "/apis", "", nil, map[string]string{"Accept": accept, "If-None-Match": etag})
			if resp.StatusCode != http.StatusNotModified {
				t.Fatalf("If-None-Match: %d", resp.StatusCode)
			}
			resp, body = e.do(e.admin, "GET", "/api", "", nil, map[string]string{"Accept": accept})
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"resource":"pods"`) || !strings.Contains(string(body), `"subresource":"binding"`) {
				t.Fatalf("/api aggregated: %d %s", resp.StatusCode, body)
			}
		})
	}

	t.Run("version and openapi", func(t *testing.T) {
		resp, body := e.do(e.anonymous, "GET", "/version", "", nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"minor":"37"`) {
			t.Fatalf("/version: %d %s", resp.StatusCode, body)
		}
		resp, body = e.do(e.admin, "GET", "/openapi/v3", "", nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "apis/apps/v1") {
			t.Fatalf("/openapi/v3: %d %.200s", resp.StatusCode, body)
		}
		resp, _ = e.do(e.admin, "GET", "/openapi/v2", "", nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("/openapi/v2: %d", resp.StatusCode)
		}
	})
}

func TestOutputFormats(t *testing.T) {
	s := servertest.New(t, nil)
	e := newHTTPEnv(t, s)
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	if resp, body := e.do(e.admin, "POST", "/api/v1/namespaces/default/pods", "application/json", []byte(pod), nil); resp.StatusCode != 201 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	t.Run("yaml", func(t *testing.T) {
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods/p", "", nil, map[string]string{"Accept": "application/yaml"})
		if resp.Header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(body), "kind: Pod\n") {
			t.Fatalf("%s %s", resp.Header.Get("Content-Type"), body)
		}
	})
	t.Run("yaml body", func(t *testing.T) {
		y := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
		resp, body := e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", []byte(y), nil)
		if resp.StatusCode != 201 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("table", func(t *testing.T) {
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods?includeObject=Object", "", nil, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"})
		var table metav1.Table
		if err := json.Unmarshal(body, &table); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if table.Kind != "Table" || len(table.Rows) != 1 || len(table.ColumnDefinitions) == 0 || table.ColumnDefinitions[0].Name != "Name" {
			t.Fatalf("table: %s", body)
		}
		if !strings.Contains(string(table.Rows[0].Object.Raw), `"kind":"Pod"`) {
			t.Fatalf("includeObject=Object row: %s", table.Rows[0].Object.Raw)
		}
	})
	t.Run("partial metadata", func(t *testing.T) {
		_, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods", "", nil, map[string]string{"Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"})
		if !strings.Contains(string(body), `"kind":"PartialObjectMetadataList"`) || strings.Contains(string(body), `"containers"`) {
			t.Fatalf("%s", body)
		}
	})
	// client-go's typed clients send protobuf and ask for it first, as upstream serves it.
	proto := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	protoAccept := map[string]string{"Accept": "application/vnd.kubernetes.protobuf, application/json"}
	t.Run("protobuf", func(t *testing.T) {
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods/p", "", nil, protoAccept)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !bytes.HasPrefix(body, []byte("k8s\x00")) {
			t.Fatalf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var pod corev1.Pod
		if _, _, err := proto.Decode(body, nil, &pod); err != nil || pod.Name != "p" || pod.Spec.Containers[0].Image != "nginx" || pod.ResourceVersion == "" {
			t.Fatalf("decoded %+v: %v", pod, err)
		}
		resp, body = e.do(e.admin, "GET", "/api/v1/namespaces/default/pods", "", nil, protoAccept)
		var list corev1.PodList
		if _, _, err := proto.Decode(body, nil, &list); err != nil || resp.StatusCode != 200 || len(list.Items) != 1 || list.ResourceVersion == "" {
			t.Fatalf("list: %d %+v %v", resp.StatusCode, list, err)
		}
	})
	t.Run("protobuf error", func(t *testing.T) {
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods/missing", "", nil, protoAccept)
		var st metav1.Status
		if _, _, err := proto.Decode(body, nil, &st); err != nil || resp.StatusCode != 404 || st.Reason != metav1.StatusReasonNotFound || st.Code != 404 {
			t.Fatalf("%d %+v %v", resp.StatusCode, st, err)
		}
	})
	t.Run("protobuf body", func(t *testing.T) {
		body := protoBody(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "from-proto"}, Data: map[string]string{"k": "v"}})
		resp, out := e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf", body, nil)
		if resp.StatusCode != 201 || !strings.Contains(string(out), `"data":{"k":"v"}`) {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
	})
	t.Run("protobuf table is json", func(t *testing.T) {
		// Table has no protobuf form: the JSON alternative in Accept is served.
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods", "", nil, map[string]string{"Accept": "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io"})
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"kind":"Table"`) {
			t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})
	t.Run("protobuf watch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/api/v1/namespaces/default/pods?watch=true&resourceVersion=0", nil)
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
		resp, err := e.admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
			t.Fatalf("content type %q", ct)
		}
		frame := make([]byte, 1<<16)
		n, err := protobuf.LengthDelimitedFramer.NewFrameReader(resp.Body).Read(frame)
		if err != nil {
			t.Fatal(err)
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(frame[:n]); err != nil || ev.Type != "ADDED" {
			t.Fatalf("event %q: %v", ev.Type, err)
		}
		var pod corev1.Pod
		if _, _, err := proto.Decode(ev.Object.Raw, nil, &pod); err != nil || pod.Name != "p" {
			t.Fatalf("event object %+v: %v", pod, err)
		}
	})
	t.Run("watch stream", func(t *testing.T) {
		for _, path := range []string{"/api/v1/namespaces/default/pods?watch=true&resourceVersion=0", "/api/v1/watch/namespaces/default/pods/p?resourceVersion=0"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+path, nil)
			resp, err := e.admin.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			cancel()
			resp.Body.Close()
			if err != nil || !strings.HasPrefix(line, `{"type":"ADDED","object":{`) || !strings.Contains(line, `"name":"p"`) {
				t.Fatalf("%s: %q %v", path, line, err)
			}
		}
		// timeoutSeconds ends the stream cleanly.
		resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1", "", nil, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"kind":"Table"`) {
			t.Fatalf("table watch: %d %s", resp.StatusCode, body)
		}
	})
}

func TestHealthAndShutdown(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.ShutdownDelay = 2 * time.Second })
	e := newHTTPEnv(t, s)
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		resp, body := e.do(e.anonymous, "GET", p, "", nil, nil)
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("%s: %d %q", p, resp.StatusCode, body)
		}
	}
	resp, body := e.do(e.anonymous, "GET", "/readyz?verbose", "", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "[+]etcd ok") || !strings.Contains(string(body), "[+]shutdown ok") {
		t.Fatalf("verbose: %d %s", resp.StatusCode, body)
	}
	resp, _ = e.do(e.admin, "GET", "/healthz/etcd", "", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz/etcd: %d", resp.StatusCode)
	}
	// system:public-info-viewer has /healthz, not the single checks (as upstream).
	if resp, _ = e.do(e.anonymous, "GET", "/healthz/etcd", "", nil, nil); resp.StatusCode != 403 {
		t.Fatalf("anonymous /healthz/etcd: %d", resp.StatusCode)
	}

	// A watch is open when shutdown starts; readiness fails first, then the watch ends cleanly.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	wresp, err := e.admin.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown() }()
	eventually(t, "healthz failing while draining", func() bool {
		resp, body := e.do(e.anonymous, "GET", "/healthz?verbose", "", nil, nil)
		return resp.StatusCode == 500 && strings.Contains(string(body), "[-]shutdown failed")
	})
	if resp, _ := e.do(e.anonymous, "GET", "/livez", "", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("livez while draining: %d", resp.StatusCode)
	}
	// The watch stream ends (EOF, not an error) once the delay is over.
	sc := bufio.NewScanner(wresp.Body)
	for sc.Scan() {
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("watch did not end cleanly: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestEtcdQuorumLossFailsHealthz runs the apiserver's embedded etcd as one
// member of a three-member cluster (the stacked-etcd layout); when the other
// two members die, /healthz and /readyz fail while /livez stays up.
func TestEtcdQuorumLossFailsHealthz(t *testing.T) {
	urls := make([]string, 6)
	for i := range urls {
		u, err := embedetcd.FreeLocalURL()
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = u
	}
	names := []string{"m0", "m1", "m2"}
	cluster := fmt.Sprintf("m0=%s,m1=%s,m2=%s", urls[1], urls[3], urls[5])

	peers := make(chan *embedetcd.Server, 2)
	errs := make(chan error, 3)
	for i := 1; i < 3; i++ {
		go func() {
			m, err := embedetcd.Start(embedetcd.Config{Name: names[i], DataDir: t.TempDir(), ClientURL: urls[2*i], PeerURL: urls[2*i+1],
				InitialCluster: cluster, InitialClusterState: "new", UnsafeNoFsync: true, LogLevel: "off", StartTimeout: 30 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			peers <- m
		}()
	}
	s := servertest.New(t, func(c *server.Config) {
		c.EtcdName = "m0"
		c.EtcdListenClientURL = strings.Replace(urls[0], "http://", "https://", 1)
		c.EtcdListenPeerURL = urls[1]
		c.EtcdInitialCluster = cluster
	})
	var others []*embedetcd.Server
	for len(others) < 2 {
		select {
		case m := <-peers:
			others = append(others, m)
			t.Cleanup(m.Close)
		case err := <-errs:
			t.Fatal(err)
		}
	}
	e := newHTTPEnv(t, s)
	eventually(t, "healthy cluster", func() bool {
		resp, _ := e.do(e.anonymous, "GET", "/healthz", "", nil, nil)
		return resp.StatusCode == 200
	})
	if resp, body := e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("replicated"), nil); resp.StatusCode != 201 {
		t.Fatalf("write with quorum: %d %s", resp.StatusCode, body)
	}
	for _, m := range others {
		m.Close()
	}
	eventually(t, "healthz failing without quorum", func() bool {
		resp, body := e.do(e.anonymous, "GET", "/healthz?verbose", "", nil, nil)
		return resp.StatusCode == 500 && strings.Contains(string(body), "[-]etcd failed")
	})
	if resp, _ := e.do(e.anonymous, "GET", "/readyz", "", nil, nil); resp.StatusCode != 500 {
		t.Fatalf("readyz without quorum: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.anonymous, "GET", "/livez", "", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("livez must not depend on etcd: %d", resp.StatusCode)
	}
}
