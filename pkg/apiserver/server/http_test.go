package server_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

type httpEnv struct {
	t         *testing.T
	s         *server.Server
	admin     *http.Client
	anonymous *http.Client
}

func newHTTPEnv(t *testing.T, s *server.Server) *httpEnv {
	adminTLS := s.Certs().ClientTLSConfig()
	anonTLS := &tls.Config{RootCAs: s.Certs().CAPool, MinVersion: tls.VersionTLS12}
	return &httpEnv{
		t: t, s: s,
		admin:     &http.Client{Transport: &http.Transport{TLSClientConfig: adminTLS}, Timeout: 30 * time.Second},
		anonymous: &http.Client{Transport: &http.Transport{TLSClientConfig: anonTLS}, Timeout: 30 * time.Second},
	}
}

func (e *httpEnv) do(c *http.Client, method, path, contentType string, body []byte, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.s.URL()+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, data
}

// protoBody encodes obj as client-go does with its protobuf content type.
func protoBody(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const cmJSON = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"data":{"a":"b"}}`

func cm(name string) []byte { return []byte(strings.Replace(cmJSON, "NAME", name, 1)) }

func TestBadInput(t *testing.T) {
	s := servertest.New(t, nil)
	e := newHTTPEnv(t, s)
	// An object to update and patch.
	if resp, body := e.do(e.admin, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("existing"), nil); resp.StatusCode != 201 {
		t.Fatalf("setup: %d %s", resp.StatusCode, body)
	}
	cms := "/api/v1/namespaces/default/configmaps"
	huge := append([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},"data":{"a":"`), bytes.Repeat([]byte("x"), 3*1024*1024+10)...)
	huge = append(huge, `"}}`...)

	tests := []struct {
		name        string
		client      *http.Client
		method      string
		path        string
		contentType string
		body        []byte
		header      map[string]string
		code        int
		reason      metav1.StatusReason
		message     string
	}{
		{name: "body too large", method: "POST", path: cms, contentType: "application/json", body: huge, code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, message: "limit is 3145728"},
		{name: "malformed json", method: "POST", path: cms, contentType: "application/json", body: []byte("{\n  \"apiVersion\": \"v1\",\n  \"kind\": ConfigMap\n}"), code: 400, reason: metav1.StatusReasonBadRequest, message: "line 3, column"},
		{name: "malformed yaml", method: "POST", path: cms, contentType: "application/yaml", body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n"), code: 400, reason: metav1.StatusReasonBadRequest, message: "not valid YAML"},
		{name: "wrong type for a field", method: "POST", path: cms, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t"},"data":{"a":1}}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "data"},
		{name: "not an object", method: "POST", path: cms, contentType: "application/json", body: []byte(`[1,2]`), code: 400, reason: metav1.StatusReasonBadRequest, message: "must be a JSON object"},
		{name: "empty body", method: "POST", path: cms, contentType: "application/json", body: nil, code: 400, reason: metav1.StatusReasonBadRequest, message: "empty"},
		{name: "wrong apiVersion", method: "POST", path: cms, contentType: "application/json", body: []byte(`{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the expected API version"},
		{name: "wrong kind", method: "POST", path: cms, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the expected kind"},
		{name: "name mismatch", method: "PUT", path: cms + "/existing", contentType: "application/json", body: cm("other"), code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the name on the URL"},
		{name: "namespace mismatch", method: "POST", path: cms, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "namespace"},
		{name: "unknown field strict", method: "POST", path: cms + "?fieldValidation=Strict", contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"bogus":1}`), code: 400, reason: metav1.StatusReasonBadRequest, message: `strict decoding error: unknown field "bogus"`},
		{name: "duplicate field strict", method: "POST", path: cms + "?fieldValidation=Strict", contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":{},"data":{}}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "duplicate field"},
		{name: "bad fieldValidation", method: "POST", path: cms + "?fieldValidation=Loose", contentType: "application/json", body: cm("fv"), code: 400, reason: metav1.StatusReasonBadRequest, message: "fieldValidation"},
		{name: "bad dryRun", method: "POST", path: cms + "?dryRun=Some", contentType: "application/json", body: cm("dr"), code: 400, reason: metav1.StatusReasonBadRequest, message: "dryRun"},
		{name: "malformed protobuf", method: "POST", path: cms, contentType: "application/vnd.kubernetes.protobuf", body: []byte("k8s\x00\x0a\xff\xff"), code: 400, reason: metav1.StatusReasonBadRequest, message: "not a valid protobuf object"},
		{name: "protobuf without envelope", method: "POST", path: cms, contentType: "application/vnd.kubernetes.protobuf", body: []byte("{}"), code: 400, reason: metav1.StatusReasonBadRequest, message: "not a valid protobuf object"},
		{name: "empty protobuf", method: "POST", path: cms, contentType: "application/vnd.kubernetes.protobuf", body: nil, code: 400, reason: metav1.StatusReasonBadRequest, message: "empty"},
		{name: "protobuf of another kind", method: "POST", path: cms, contentType: "application/vnd.kubernetes.protobuf", body: protoBody(t, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "s"}}), code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the expected kind"},
		{name: "protobuf of another group", method: "POST", path: cms, contentType: "application/vnd.kubernetes.protobuf", body: protoBody(t, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "d"}}), code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the expected API version"},
		{name: "unsupported content type", method: "POST", path: cms, contentType: "text/plain", body: cm("ct"), code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: "text/plain"},
		{name: "unsupported patch type", method: "PATCH", path: cms + "/existing", contentType: "application/json", body: []byte(`{}`), code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "apply without fieldManager", method: "PATCH", path: cms + "/existing", contentType: "application/apply-patch+yaml", body: []byte(`{}`), code: 422, reason: metav1.StatusReasonInvalid, message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{name: "force on a merge patch", method: "PATCH", path: cms + "/existing?force=true", contentType: "application/merge-patch+json", body: []byte(`{}`), code: 422, reason: metav1.StatusReasonInvalid, message: "force: Forbidden: may not be specified for non-apply patch"},
		{name: "apply as cbor", method: "PATCH", path: cms + "/existing?fieldManager=m", contentType: "application/apply-patch+cbor", body: []byte{0xa0}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "apply malformed yaml", method: "PATCH", path: cms + "/existing?fieldManager=m", contentType: "application/apply-patch+yaml", body: []byte("apiVersion: v1\nkind: [unclosed\n"), code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding patch"},
		{name: "apply wrong apiVersion", method: "PATCH", path: cms + "/existing?fieldManager=m", contentType: "application/apply-patch+yaml", body: []byte("apiVersion: apps/v1\nkind: ConfigMap\nmetadata: {name: existing}\n"), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid object type: apps/v1, Kind=ConfigMap"},
		{name: "apply wrong kind", method: "PATCH", path: cms + "/existing?fieldManager=m", contentType: "application/apply-patch+yaml", body: []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: existing}\n"), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid object type: /v1, Kind=Secret"},
		{name: "apply name mismatch", method: "PATCH", path: cms + "/existing?fieldManager=m", contentType: "application/apply-patch+yaml", body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"), code: 400, reason: metav1.StatusReasonBadRequest, message: "the name of the object (other) does not match the name on the URL (existing)"},
		// kube-apiserver answers an unknown field in an apply body with the field manager's
		// plain error: 500, whatever fieldValidation says.
		{name: "apply unknown field", method: "PATCH", path: cms + "/existing?fieldManager=m&fieldValidation=Strict", contentType: "application/apply-patch+yaml", body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: existing}\nbogus: 1\n"), code: 500, reason: metav1.StatusReasonInternalError, message: "failed to create typed patch object (/existing; /v1, Kind=ConfigMap): .bogus: field not declared in schema"},
		{name: "apply with managedFields", method: "PATCH", path: cms + "/existing?fieldManager=m", contentType: "application/apply-patch+yaml", body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: existing, managedFields: [{manager: x}]}\n"), code: 400, reason: metav1.StatusReasonBadRequest, message: "metadata.managedFields must be nil"},
		{name: "malformed json patch", method: "PATCH", path: cms + "/existing", contentType: "application/json-patch+json", body: []byte(`{"op":"add"}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "json patch on missing path", method: "PATCH", path: cms + "/existing", contentType: "application/json-patch+json", body: []byte(`[{"op":"replace","path":"/nope/x","value":1}]`), code: 400, reason: metav1.StatusReasonBadRequest, message: "could not be applied"},
		{name: "patch renaming", method: "PATCH", path: cms + "/existing", contentType: "application/merge-patch+json", body: []byte(`{"metadata":{"name":"renamed"}}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the name on the URL"},
		{name: "patch missing object", method: "PATCH", path: cms + "/missing", contentType: "application/merge-patch+json", body: []byte(`{}`), code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "missing" not found`},
		{name: "stale update", method: "PUT", path: cms + "/existing", contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing","resourceVersion":"1"}}`), code: 409, reason: metav1.StatusReasonConflict, message: "the object has been modified"},
		{name: "duplicate create", method: "POST", path: cms, contentType: "application/json", body: cm("existing"), code: 409, reason: metav1.StatusReasonAlreadyExists, message: `configmaps "existing" already exists`},
		{name: "invalid object", method: "POST", path: cms, contentType: "application/json", body: cm("Not_Valid"), code: 422, reason: metav1.StatusReasonInvalid, message: "metadata.name"},
		{name: "missing namespace", method: "POST", path: "/api/v1/namespaces/nope/configmaps", contentType: "application/json", body: cm("x"), code: 404, reason: metav1.StatusReasonNotFound, message: `namespaces "nope" not found`},
		{name: "get missing", method: "GET", path: cms + "/missing", code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "missing" not found`},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/default/widgets", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown group", method: "GET", path: "/apis/nope.example.com/v1/things", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "bad label selector", method: "GET", path: cms + "?labelSelector=a%20in%20(", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unsupported field selector", method: "GET", path: cms + "?fieldSelector=spec.nope%3D1", code: 400, reason: metav1.StatusReasonBadRequest, message: "field label not supported"},
		{name: "bad resourceVersionMatch", method: "GET", path: cms + "?resourceVersion=1&resourceVersionMatch=Sometimes", code: 400, reason: metav1.StatusReasonBadRequest, message: "resourceVersionMatch"},
		{name: "match without rv", method: "GET", path: cms + "?resourceVersionMatch=Exact", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad resourceVersion", method: "GET", path: cms + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad continue", method: "GET", path: cms + "?limit=1&continue=garbage", code: 400, reason: metav1.StatusReasonBadRequest, message: "continue"},
		{name: "bad limit", method: "GET", path: cms + "?limit=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "future resourceVersion", method: "GET", path: cms + "?resourceVersion=999999999", code: 504, reason: metav1.StatusReasonTimeout, message: "resource version"},
		{name: "bad includeObject", method: "GET", path: cms, header: map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, code: 200},
		{name: "not acceptable", method: "GET", path: cms, header: map[string]string{"Accept": "text/html"}, code: 406, reason: metav1.StatusReasonNotAcceptable},
		{name: "bad propagation policy", method: "DELETE", path: cms + "/existing?propagationPolicy=Sideways", code: 400, reason: metav1.StatusReasonBadRequest, message: "propagationPolicy"},
		{name: "delete with stale precondition", method: "DELETE", path: cms + "/existing", contentType: "application/json", body: []byte(`{"preconditions":{"resourceVersion":"1"}}`), code: 409, reason: metav1.StatusReasonConflict},
		{name: "anonymous", client: e.anonymous, method: "GET", path: cms, code: 403, reason: metav1.StatusReasonForbidden,
			message: `configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default"`},
		{name: "anonymous discovery", client: e.anonymous, method: "GET", path: "/api", code: 403, reason: metav1.StatusReasonForbidden,
			message: `forbidden: User "system:anonymous" cannot get path "/api"`},
		{name: "method not allowed", method: "PUT", path: cms, contentType: "application/json", body: cm("x"), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.client
			if c == nil {
				c = e.admin
			}
			resp, body := e.do(c, tc.method, tc.path, tc.contentType, tc.body, tc.header)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.code < 300 {
				return
			}
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure {
				t.Fatalf("not a Status: %s (%v)", body, err)
			}
			if int(st.Code) != tc.code || (tc.reason != "" && st.Reason != tc.reason) {
				t.Fatalf("code %d reason %q, want %d %q: %s", st.Code, st.Reason, tc.code, tc.reason, body)
			}
			if !strings.Contains(st.Message, tc.message) {
				t.Fatalf("message %q does not contain %q", st.Message, tc.message)
			}
			if tc.code == 422 && (st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field == "") {
				t.Fatalf("422 without field causes: %s", body)
			}
			if tc.code == 504 && resp.Header.Get("Retry-After") == "" {
				t.Fatal("504 without Retry-After")
			}
		})
	}

	t.Run("unknown field warns by default", func(t *testing.T) {
		resp, body := e.do(e.admin, "POST", cms, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"bogus":1}`), nil)
		if resp.StatusCode != 201 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if w := resp.Header.Get("Warning"); !strings.Contains(w, `unknown field \"bogus\"`) {
			t.Fatalf("Warning header %q", w)
		}
		resp, _ = e.do(e.admin, "POST", cms+"?fieldValidation=Ignore", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ignored"},"bogus":1}`), nil)
		if resp.StatusCode != 201 || resp.Header.Get("Warning") != "" {
			t.Fatalf("Ignore: %d warning %q", resp.StatusCode, resp.Header.Get("Warning"))
		}
	})

	t.Run("compacted exact list is 410", func(t *testing.T) {
		_, body := e.do(e.admin, "GET", cms, "", nil, nil)
		var list metav1.List
		_ = json.Unmarshal(body, &list)
		old := list.ResourceVersion
		e.do(e.admin, "POST", cms, "application/json", cm("bump"), nil)
		ctx := t.Context()
		r, err := s.EtcdClient().Get(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.EtcdClient().Compact(ctx, r.Header.Revision); err != nil {
			t.Fatal(err)
		}
		resp, body := e.do(e.admin, "GET", cms+"?resourceVersion="+old+"&resourceVersionMatch=Exact", "", nil, nil)
		if resp.StatusCode != 410 || !strings.Contains(string(body), `"reason":"Expired"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}
