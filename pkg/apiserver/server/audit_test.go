package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// auditPolicy exercises levels and stages: configmap "meta-only" and namespace "meta" at
// Metadata, namespace "req" at Request without RequestReceived, health checks not at all, the rest at
// RequestResponse (secrets and tokens included, which the apiserver caps).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["meta-only"]
- level: Metadata
  namespaces: ["meta"]
- level: Request
  namespaces: ["req"]
  omitStages: ["RequestReceived"]
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*"]
- level: RequestResponse
`

func randomString(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// readAudit parses the log line by line as audit.k8s.io/v1 Events, strictly (a field the
// type does not have fails the test), and checks what every event must have.
func readAudit(t *testing.T, path string) []audit.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []audit.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var ev audit.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s:%d is not an audit event: %v\n%s", path, n, err, sc.Text())
		}
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.AuditID == "" || ev.Level == "" || ev.Level == audit.LevelNone ||
			ev.RequestReceivedTimestamp.IsZero() || ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) || ev.RequestURI == "" || ev.Verb == "" {
			t.Fatalf("%s:%d: incomplete event: %s", path, n, sc.Text())
		}
		switch ev.Stage {
		case audit.StageRequestReceived, audit.StageResponseStarted, audit.StageResponseComplete, audit.StagePanic:
		default:
			t.Fatalf("%s:%d: stage %q", path, n, ev.Stage)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// waitAudit polls the log until match finds the events it wants (the last stage of a
// request is written as its handler returns, which may be just after the client has the
// response), and returns them.
func waitAudit(t *testing.T, path, what string, match func(audit.Event) bool, n int) []audit.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []audit.Event
		for _, ev := range readAudit(t, path) {
			if match(ev) {
				got = append(got, ev)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d events, want %d", what, len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stagesOf(evs []audit.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, string(ev.Stage))
	}
	return strings.Join(s, ",")
}

func startAudited(t *testing.T, policy string, mutate func(*server.Config)) (*server.Server, string) {
	t.Helper()
	dir := t.TempDir()
	policyPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit", "audit.log")
	s := servertest.New(t, func(c *server.Config) {
		c.AuditPolicyFile, c.AuditLogPath = policyPath, logPath
		if mutate != nil {
			mutate(c)
		}
	})
	return s, logPath
}

func TestAuditLog(t *testing.T) {
	token := "tok-" + randomString(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+",carol,uid-carol\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, logPath := startAudited(t, auditPolicy, func(c *server.Config) { c.TokenAuthFile = tokenFile })
	ctx := context.Background()
	adminRC := servertest.RestConfig(t, s)
	admin := kubernetes.NewForConfigOrDie(adminRC)
	for _, ns := range []string{"req", "meta"} {
		mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	byID := func(id string) func(audit.Event) bool {
		return func(ev audit.Event) bool { return string(ev.AuditID) == id }
	}
	complete := func(pred func(audit.Event) bool) func(audit.Event) bool {
		return func(ev audit.Event) bool { return ev.Stage == audit.StageResponseComplete && pred(ev) }
	}
	objectIs := func(resource, ns, name, verb string) func(audit.Event) bool {
		return func(ev audit.Event) bool {
			return ev.ObjectRef != nil && ev.ObjectRef.Resource == resource && ev.ObjectRef.Namespace == ns && ev.ObjectRef.Name == name && ev.Verb == verb
		}
	}

	t.Run("audit id", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/namespaces/default/configmaps", nil)
		req.Header.Set("Audit-ID", "client-chosen-id")
		resp := doRaw(t, adminRC, req)
		if got := resp.Header.Get("Audit-ID"); got != "client-chosen-id" {
			t.Fatalf("Audit-ID %q, want the client's", got)
		}
		evs := waitAudit(t, logPath, "client id", byID("client-chosen-id"), 2)
		if stagesOf(evs) != "RequestReceived,ResponseComplete" || evs[1].Verb != "list" || evs[1].ResponseStatus.Code != 200 ||
			evs[1].User.Username != "admin" || len(evs[1].SourceIPs) == 0 || evs[1].SourceIPs[0] != "127.0.0.1" || evs[1].UserAgent == "" {
			t.Fatalf("events %+v", evs)
		}
		if evs[1].Annotations[server.DecisionAnnotation] != "allow" {
			t.Fatalf("annotations %v, want decision allow", evs[1].Annotations)
		}
		req, _ = http.NewRequest(http.MethodGet, s.URL()+"/version", nil)
		resp = doRaw(t, adminRC, req)
		id := resp.Header.Get("Audit-ID")
		if len(id) != 36 {
			t.Fatalf("Audit-ID %q, want a UUID", id)
		}
		evs = waitAudit(t, logPath, "/version", complete(byID(id)), 1)
		if evs[0].Verb != "get" || evs[0].ObjectRef != nil || evs[0].RequestURI != "/version" || evs[0].Level != audit.LevelRequestResponse || evs[0].ResponseObject != nil {
			t.Fatalf("/version event %+v", evs[0])
		}
		req, _ = http.NewRequest(http.MethodGet, s.URL()+"/healthz", nil)
		resp = doRaw(t, adminRC, req)
		if id := resp.Header.Get("Audit-ID"); id == "" || len(waitAudit(t, logPath, "any", byID(id), 0)) != 0 {
			t.Fatalf("/healthz (level None) is in the log, or has no Audit-ID %q", id)
		}
	})

	t.Run("levels and stages", func(t *testing.T) {
		// The name of a created object comes from its body (the policy never sees it, as
		// upstream's: a create of "meta-only" is not matched by resourceNames).
		mustCreate(t, admin.CoreV1().ConfigMaps("meta").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-meta"}, Data: map[string]string{"k": "meta-value"}})
		evs := waitAudit(t, logPath, "metadata create", complete(objectIs("configmaps", "meta", "in-meta", "create")), 1)
		evs = waitAudit(t, logPath, "metadata create", byID(string(evs[0].AuditID)), 2)
		if stagesOf(evs) != "RequestReceived,ResponseComplete" || evs[1].Level != audit.LevelMetadata || evs[1].RequestObject != nil || evs[1].ResponseObject != nil ||
			evs[1].ResponseStatus.Code != 201 || evs[1].ObjectRef.APIVersion != "v1" {
			t.Fatalf("Metadata events %+v", evs)
		}
		mustCreate(t, admin.CoreV1().ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "meta-only"}, Data: map[string]string{"k": "meta-value"}})
		evs = waitAudit(t, logPath, "create meta-only", complete(objectIs("configmaps", "default", "meta-only", "create")), 1)
		if evs[0].Level != audit.LevelRequestResponse || evs[0].ObjectRef.UID == "" || evs[0].ObjectRef.ResourceVersion == "" || evs[0].RequestObject == nil || evs[0].ResponseObject == nil {
			t.Fatalf("create of meta-only: %+v %+v", evs[0], evs[0].ObjectRef)
		}
		// As upstream, RequestReceived comes before the body is decoded.
		evs = waitAudit(t, logPath, "create meta-only", byID(string(evs[0].AuditID)), 2)
		if evs[0].Stage != audit.StageRequestReceived || evs[0].RequestObject != nil || evs[0].ObjectRef.Name != "" {
			t.Fatalf("RequestReceived of a create: %+v %+v", evs[0], evs[0].ObjectRef)
		}

		// A protobuf body is recorded as JSON.
		pbRC := rest.CopyConfig(adminRC)
		pbRC.ContentType = "application/vnd.kubernetes.protobuf"
		pb := kubernetes.NewForConfigOrDie(pbRC)
		mustCreate(t, pb.CoreV1().ConfigMaps("req").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-req"}, Data: map[string]string{"k": "req-value"}})
		evs = waitAudit(t, logPath, "request create", objectIs("configmaps", "req", "in-req", "create"), 1)
		if stagesOf(evs) != "ResponseComplete" || evs[0].Level != audit.LevelRequest || evs[0].ResponseObject != nil {
			t.Fatalf("Request events %+v", evs)
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(evs[0].RequestObject, &cm); err != nil || cm.Data["k"] != "req-value" || cm.Kind != "ConfigMap" {
			t.Fatalf("requestObject %s: %v", evs[0].RequestObject, err)
		}

		if _, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "meta-only", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, admin.CoreV1().ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "full"}, Data: map[string]string{"k": "full-value"}})
		if _, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "full", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		evs = waitAudit(t, logPath, "get full", complete(objectIs("configmaps", "default", "full", "get")), 1)
		cm = corev1.ConfigMap{}
		if err := json.Unmarshal(evs[0].ResponseObject, &cm); err != nil || cm.Data["k"] != "full-value" || evs[0].Level != audit.LevelRequestResponse {
			t.Fatalf("responseObject %s: %v", evs[0].ResponseObject, err)
		}
		if cm.ManagedFields != nil {
			t.Fatalf("omitManagedFields: the responseObject has managedFields")
		}
		evs = waitAudit(t, logPath, "get meta-only", complete(objectIs("configmaps", "default", "meta-only", "get")), 1)
		if evs[0].Level != audit.LevelMetadata || evs[0].ResponseObject != nil {
			t.Fatalf("get meta-only at %s with %s", evs[0].Level, evs[0].ResponseObject)
		}

		// A failure carries its Status.
		_, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "missing", metav1.GetOptions{})
		if err == nil {
			t.Fatal("got a missing configmap")
		}
		evs = waitAudit(t, logPath, "404", complete(objectIs("configmaps", "default", "missing", "get")), 1)
		if st := evs[0].ResponseStatus; st.Code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Message != `configmaps "missing" not found` {
			t.Fatalf("404 status %+v", st)
		}
	})

	t.Run("watch", func(t *testing.T) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w, err := admin.CoreV1().ConfigMaps("watched").Watch(wctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evs := waitAudit(t, logPath, "watch started", func(ev audit.Event) bool {
			return ev.Verb == "watch" && ev.ObjectRef != nil && ev.ObjectRef.Namespace == "watched"
		}, 2)
		if stagesOf(evs) != "RequestReceived,ResponseStarted" || evs[1].ResponseStatus.Code != 200 {
			t.Fatalf("watch events %s %+v", stagesOf(evs), evs)
		}
		w.Stop()
		id := string(evs[0].AuditID)
		evs = waitAudit(t, logPath, "watch complete", byID(id), 3)
		if stagesOf(evs) != "RequestReceived,ResponseStarted,ResponseComplete" || evs[2].ResponseObject != nil {
			t.Fatalf("watch events %s", stagesOf(evs))
		}
	})

	t.Run("forbidden, unauthorized, impersonated", func(t *testing.T) {
		_, aliceRC := userConfig(t, s, "alice")
		alice := kubernetes.NewForConfigOrDie(aliceRC)
		_, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, "")
		evs := waitAudit(t, logPath, "403", complete(func(ev audit.Event) bool { return ev.User.Username == "alice" && ev.Verb == "list" }), 1)
		st := evs[0].ResponseStatus
		if st.Code != 403 || st.Reason != metav1.StatusReasonForbidden || !strings.Contains(st.Message, `User "alice" cannot list resource "pods"`) {
			t.Fatalf("403 status %+v", st)
		}
		if evs[0].Annotations[server.DecisionAnnotation] != "forbid" {
			t.Fatalf("403 annotations %v", evs[0].Annotations)
		}

		bad := rest.AnonymousClientConfig(adminRC)
		bad.BearerToken = "not-a-token"
		_, err = kubernetes.NewForConfigOrDie(bad).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			t.Fatal("a bad token was accepted")
		}
		evs = waitAudit(t, logPath, "401", func(ev audit.Event) bool { return ev.ResponseStatus != nil && ev.ResponseStatus.Code == 401 }, 1)
		if evs[0].Stage != audit.StageResponseStarted || evs[0].User.Username != "" {
			t.Fatalf("401 event %+v", evs[0])
		}

		imp := rest.CopyConfig(adminRC)
		imp.Impersonate = rest.ImpersonationConfig{UserName: "dave", Groups: []string{"devs"}}
		_, err = kubernetes.NewForConfigOrDie(imp).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, "")
		evs = waitAudit(t, logPath, "impersonated", complete(func(ev audit.Event) bool { return ev.ImpersonatedUser != nil }), 1)
		if evs[0].User.Username != "admin" || evs[0].ImpersonatedUser.Username != "dave" || evs[0].ResponseStatus.Code != 403 {
			t.Fatalf("impersonated event %+v", evs[0])
		}
	})

	t.Run("no secret in the log", func(t *testing.T) {
		k := newKubectlEnv(t, s.KubeconfigPath())
		values := []string{"s3cr3t-" + randomString(t), "s3cr3t-" + randomString(t), "s3cr3t-" + randomString(t)}
		k.ok("create", "secret", "generic", "creds", "--from-literal=password="+values[0])
		k.ok("get", "secret", "creds", "-o", "yaml")
		k.ok("get", "secrets", "-o", "json")
		k.ok("patch", "secret", "creds", "-p", `{"stringData":{"other":"`+values[1]+`"}}`)
		manifest := filepath.Join(t.TempDir(), "secret.yaml")
		if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  key: "+values[2]+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		k.ok("apply", "-f", manifest)
		k.ok("get", "secret", "applied", "-o", "yaml")
		saToken := strings.TrimSpace(k.ok("create", "token", "default"))
		tr, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: saToken}}, metav1.CreateOptions{})
		if err != nil || !tr.Status.Authenticated {
			t.Fatalf("TokenReview: %+v %v", tr, err)
		}
		for _, tok := range []string{saToken, token} {
			rc := rest.AnonymousClientConfig(adminRC)
			rc.BearerToken = tok
			_, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
			wantForbidden(t, err, "")
		}
		waitAudit(t, logPath, "carol's request", complete(func(ev audit.Event) bool { return ev.User.Username == "carol" }), 1)
		waitAudit(t, logPath, "token review", complete(objectIs("tokenreviews", "", "", "create")), 1)
		for _, ev := range waitAudit(t, logPath, "secret writes", complete(func(ev audit.Event) bool {
			return ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" && ev.Verb != "list"
		}), 4) {
			if ev.Level != audit.LevelMetadata || ev.RequestObject != nil || ev.ResponseObject != nil {
				t.Fatalf("secret event at %s: %+v", ev.Level, ev)
			}
		}
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		secrets := []string{saToken, token}
		for _, v := range values {
			secrets = append(secrets, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.StdEncoding.EncodeToString([]byte(v))[:20])
		}
		for _, v := range secrets {
			if bytes.Contains(data, []byte(v)) {
				t.Fatalf("the audit log contains the secret %q", v)
			}
		}
		if !bytes.Contains(data, []byte(`"name":"creds"`)) {
			t.Fatal("the secret's writes are not in the log at all")
		}
	})
}
