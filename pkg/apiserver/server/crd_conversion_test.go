package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// converter is a real HTTPS conversion webhook for widgets.conv.example.com: v1 has
// spec.host and spec.port, v2 spec.address ("host:port"). It labels what it converts with
// converted-to, tries to change the generation (the apiserver must restore it) and refuses
// objects named "broken".
type converter struct {
	mu    sync.Mutex
	paths map[string]int // calls by URL path
}

func (c *converter) calls(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[path]
}

func (c *converter) serve(w http.ResponseWriter, r *http.Request) {
	var rev apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.paths[r.URL.Path]++
	c.mu.Unlock()
	resp := &apiextensionsv1.ConversionResponse{UID: rev.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range rev.Request.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if u.GetName() == "broken" {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "cannot convert broken"}
			resp.ConvertedObjects = nil
			break
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		switch rev.Request.DesiredAPIVersion {
		case "conv.example.com/v2":
			host, _ := spec["host"].(string)
			port, _ := spec["port"].(int64)
			spec = map[string]any{"address": net.JoinHostPort(host, strconv.FormatInt(port, 10))}
		case "conv.example.com/v1":
			host, port, _ := net.SplitHostPort(fmt.Sprint(spec["address"]))
			n, _ := strconv.ParseInt(port, 10, 64)
			spec = map[string]any{"host": host, "port": n}
		}
		_ = unstructured.SetNestedMap(u.Object, spec, "spec")
		u.SetAPIVersion(rev.Request.DesiredAPIVersion)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["converted-to"] = strings.TrimPrefix(rev.Request.DesiredAPIVersion, "conv.example.com/")
		u.SetLabels(labels)
		u.SetGeneration(99)
		data, _ := u.MarshalJSON()
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	rev.Response, rev.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&rev)
}

const widgetConversionCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.conv.example.com
spec:
  group: conv.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: %q
        caBundle: %s
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              host: {type: string}
              port: {type: integer}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              address: {type: string}
`

// TestCustomResourceConversionWebhook: a CRD with two versions converted by a webhook in the
// test process. Objects written at either version are stored at the storage version and read,
// listed and watched at both; kubectl reads and patches through the other version; a switch
// from a URL to a service reference takes effect; the webhook may change labels but not the
// rest of metadata; a refused conversion is a 500 naming the webhook's message.
func TestCustomResourceConversionWebhook(t *testing.T) {
	testenv.Kubectl(t)
	// The hook Service's Endpoints need an address that is not loopback: the test runs in a
	// namespace of its own that has one.
	addr, inHost := netns.RerunInHost(t, "hcv-", "10.77.93")
	if !inHost {
		return
	}
	ctx := context.Background()
	s := servertest.New(t, nil)
	cfg := servertest.RestConfig(t, s)
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	k := newKubectlEnv(t, s.KubeconfigPath())

	conv := &converter{paths: map[string]int{}}
	srv, caPEM := newTLSServer(t, http.HandlerFunc(conv.serve))
	createCRD(t, dyn, fmt.Sprintf(widgetConversionCRD, srv.URL+"/convert", base64.StdEncoding.EncodeToString(caPEM)))
	v1 := schema.GroupVersionResource{Group: "conv.example.com", Version: "v1", Resource: "widgets"}
	v2 := schema.GroupVersionResource{Group: "conv.example.com", Version: "v2", Resource: "widgets"}
	waitServed(t, dyn, v1)
	waitServed(t, dyn, v2)

	widget := func(version, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conv.example.com/" + version, "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
	}
	w1, err := dyn.Resource(v1).Namespace("default").Create(ctx, widget("v1", "w1", map[string]any{"host": "a.example", "port": int64(80)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conv.calls("/convert") != 0 {
		t.Fatalf("a write at the storage version called the webhook %d times", conv.calls("/convert"))
	}

	// Read at v2: converted, the webhook's label kept, its generation change undone.
	got, err := dyn.Resource(v2).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if addr, _, _ := unstructured.NestedString(got.Object, "spec", "address"); addr != "a.example:80" || got.GetAPIVersion() != "conv.example.com/v2" {
		t.Fatalf("w1 at v2: apiVersion %s, spec %v", got.GetAPIVersion(), got.Object["spec"])
	}
	if got.GetLabels()["converted-to"] != "v2" || got.GetGeneration() != w1.GetGeneration() || got.GetUID() != w1.GetUID() {
		t.Fatalf("w1 at v2: labels %v, generation %d (want %d), uid %s", got.GetLabels(), got.GetGeneration(), w1.GetGeneration(), got.GetUID())
	}

	// Written at v2: stored at v1, read back at v1.
	if _, err := dyn.Resource(v2).Namespace("default").Create(ctx, widget("v2", "w2", map[string]any{"address": "b.example:8080"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.EtcdClient().Get(ctx, "/registry/conv.example.com/widgets/default/w2")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("w2 in etcd: %v %v", resp, err)
	}
	var stored map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	if spec, _ := stored["spec"].(map[string]any); stored["apiVersion"] != "conv.example.com/v1" || spec["host"] != "b.example" || spec["port"] != float64(8080) {
		t.Fatalf("w2 stored as %s", resp.Kvs[0].Value)
	}
	got, err = dyn.Resource(v1).Namespace("default").Get(ctx, "w2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if port, _, _ := unstructured.NestedInt64(got.Object, "spec", "port"); port != 8080 {
		t.Fatalf("w2 at v1: %v", got.Object["spec"])
	}

	// Listed and watched at v2.
	list, err := dyn.Resource(v2).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	for _, it := range list.Items {
		addrs[it.GetName()], _, _ = unstructured.NestedString(it.Object, "spec", "address")
	}
	if addrs["w1"] != "a.example:80" || addrs["w2"] != "b.example:8080" {
		t.Fatalf("list at v2: %v", addrs)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	wi, err := dyn.Resource(v2).Namespace("default").Watch(wctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	if _, err := dyn.Resource(v1).Namespace("default").Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"port":81}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-wi.ResultChan():
		u, _ := ev.Object.(*unstructured.Unstructured)
		if addr, _, _ := unstructured.NestedString(u.Object, "spec", "address"); ev.Type != watch.Modified || addr != "a.example:81" {
			t.Fatalf("watch at v2: %s %v", ev.Type, ev.Object)
		}
	case <-wctx.Done():
		t.Fatal("no watch event at v2")
	}

	// kubectl through the other version.
	if out := k.ok("get", "widgets.v2.conv.example.com", "w2", "-o", "jsonpath={.spec.address}"); out != "b.example:8080" {
		t.Fatalf("kubectl get at v2: %q", out)
	}
	k.ok("patch", "widgets.v2.conv.example.com", "w2", "--type=merge", "-p", `{"spec":{"address":"b.example:9090"}}`)
	if out := k.ok("get", "widgets.v1.conv.example.com", "w2", "-o", "jsonpath={.spec.host} {.spec.port}"); out != "b.example 9090" {
		t.Fatalf("kubectl get at v1 after a patch at v2: %q", out)
	}

	// The webhook as a Service (its Endpoints point at the test server, another path).
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createEndpoints(ctx, t, cs, addr, port); err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	patch := `{"spec":{"conversion":{"webhook":{"clientConfig":{"url":null,"service":{"namespace":"default","name":"hook","path":"/convert-svc"}}}}}}`
	if _, err := dyn.Resource(crdGVR).Patch(ctx, "widgets.conv.example.com", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for conv.calls("/convert-svc") == 0 {
		if _, err := dyn.Resource(v2).Namespace("default").Get(ctx, "w1", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the service reference was not used")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A refused conversion: 500 with the webhook's message, as upstream; on a write nothing
	// is stored, on a read the storage version still reads.
	wantRefused := func(err error) {
		t.Helper()
		if st := (apierrors.APIStatus)(nil); !errors.As(err, &st) || st.Status().Code != http.StatusInternalServerError ||
			!strings.HasPrefix(st.Status().Message, "conversion webhook for conv.example.com/v") || !strings.HasSuffix(st.Status().Message, "failed: cannot convert broken") {
			t.Fatalf("conversion of broken: %v", err)
		}
	}
	_, err = dyn.Resource(v2).Namespace("default").Create(ctx, widget("v2", "broken", map[string]any{"address": "c:1"}), metav1.CreateOptions{})
	wantRefused(err)
	if _, err := dyn.Resource(v1).Namespace("default").Get(ctx, "broken", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused create stored something: %v", err)
	}
	if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, widget("v1", "broken", map[string]any{"host": "c", "port": int64(1)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = dyn.Resource(v2).Namespace("default").Get(ctx, "broken", metav1.GetOptions{})
	wantRefused(err)
	// Its storage version still reads.
	if _, err := dyn.Resource(v1).Namespace("default").Get(ctx, "broken", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
