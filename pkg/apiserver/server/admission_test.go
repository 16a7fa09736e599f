package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/netns"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// hookServer is a real HTTPS admission webhook in the test process: /mutate adds the label
// mutated=yes (and a warning), /deny refuses objects labelled deny=yes with code 406, and
// /hang answers only when the request is given up.
type hookServer struct {
	srv    *httptest.Server
	caPEM  []byte
	mu     sync.Mutex
	calls  map[string]int // path + " " + operation + " " + name
	dryRun map[string]bool
	kinds  map[string]string // name: "kind version / requestKind version" of the last call
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{calls: map[string]int{}, dryRun: map[string]bool{}, kinds: map[string]string{}}
	h.srv, h.caPEM = newTLSServer(t, http.HandlerFunc(h.serve))
	return h
}

// newTLSServer serves handler over HTTPS with a certificate for 127.0.0.1 and
// hook.default.svc from a CA of its own, returned as PEM (a webhook's caBundle).
func newTLSServer(t *testing.T, handler http.Handler) (*httptest.Server, []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hook-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hook"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"hook.default.svc"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

func (h *hookServer) count(path string, op admissionv1.Operation, name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[path+" "+string(op)+" "+name]
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	var rev admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := rev.Request
	h.mu.Lock()
	h.calls[r.URL.Path+" "+string(req.Operation)+" "+req.Name]++
	h.dryRun[req.Name] = req.DryRun != nil && *req.DryRun
	if req.RequestKind != nil {
		h.kinds[req.Name] = req.Kind.Group + "/" + req.Kind.Version + "." + req.Kind.Kind + " / " + req.RequestKind.Group + "/" + req.RequestKind.Version
	}
	h.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	var obj metav1.PartialObjectMetadata
	_ = json.Unmarshal(raw, &obj)
	switch r.URL.Path {
	case "/mutate":
		var patch []map[string]any
		if obj.Labels == nil {
			patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{}})
		}
		patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"})
		resp.Patch, _ = json.Marshal(patch)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
		resp.Warnings = []string{"mutated by the test webhook"}
		resp.AuditAnnotations = map[string]string{"seen": req.Name}
	case "/counter":
		// Reinvocation: appends one more "x" to the label count each call.
		n := obj.Labels["count"] + "x"
		var patch []map[string]any
		if obj.Labels == nil {
			patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{}})
		}
		patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels/count", "value": n})
		resp.Patch, _ = json.Marshal(patch)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	case "/deny":
		if obj.Labels["deny"] == "yes" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusNotAcceptable, Message: "objects labelled deny=yes are not welcome here"}
		}
	case "/hang":
		<-r.Context().Done()
		return
	}
	rev.Response = resp
	rev.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&rev)
}

type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) has(text string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if m == text {
			return true
		}
	}
	return false
}

// rule covers configmaps' create, update and delete in every namespace.
func configMapRule(ops ...admissionregv1.OperationType) []admissionregv1.RuleWithOperations {
	return []admissionregv1.RuleWithOperations{{Operations: ops, Rule: admissionregv1.Rule{
		APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
}

// TestAdmissionWebhooks runs a real HTTPS webhook against a real server, with client-go and
// kubectl as clients: mutation through a service reference, denial through a URL, delete,
// dry run, selectors, reinvocation, failurePolicy with a webhook that is down or hangs, and
// configurations picked up and dropped live.
func TestAdmissionWebhooks(t *testing.T) {
	// The hook Service's Endpoints need an address that is not loopback: the test runs in a
	// namespace of its own that has one.
	addr, inHost := netns.RerunInHost(t, "hwh-", "10.77.92")
	if !inHost {
		return
	}
	s := servertest.New(t, nil)
	hook := newHookServer(t)
	cfg := servertest.RestConfig(t, s)
	warn := &warnings{}
	cfg.WarningHandler = warn
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(hook.srv.URL, "https://"))
	port, _ := strconv.Atoi(portStr)

	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "hooked", Labels: map[string]string{"webhooks": "on"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The webhook as a Service: its Endpoints point at the test server.
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createEndpoints(ctx, t, cs, addr, port); err != nil {
		t.Fatal(err)
	}

	mutating := &admissionregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "a-mutate"},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    "mutate.hacp.test",
			ClientConfig:            admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: "default", Name: "hook", Path: ptr.To("/mutate")}, CABundle: hook.caPEM},
			Rules:                   configMapRule(admissionregv1.Create),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhooks": "on"}},
			ObjectSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}},
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	validating := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    "deny.hacp.test",
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To(hook.srv.URL + "/deny"), CABundle: hook.caPEM},
			Rules:                   configMapRule(admissionregv1.Create, admissionregv1.Update, admissionregv1.Delete),
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The configurations reach the server by watch: wait until both act.
	probe := 0
	eventuallyOK(t, "webhooks active", func() error {
		probe++
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", probe), Labels: map[string]string{"deny": "yes"}}}
		_, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("not denied yet")
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", probe)}}
		out, err := cs.CoreV1().ConfigMaps("hooked").Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Labels["mutated"] != "yes" {
			return fmt.Errorf("not mutated yet")
		}
		return nil
	})

	t.Run("mutate via service", func(t *testing.T) {
		out, err := cs.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Labels["mutated"] != "yes" {
			t.Fatalf("labels %v, want mutated=yes", out.Labels)
		}
		got, err := cs.CoreV1().ConfigMaps("hooked").Get(ctx, "m1", metav1.GetOptions{})
		if err != nil || got.Labels["mutated"] != "yes" {
			t.Fatalf("stored labels %v (%v), want mutated=yes", got.Labels, err)
		}
		if !warn.has("mutated by the test webhook") {
			t.Fatalf("warnings %v, want the webhook's", warn.msgs)
		}
	})
	t.Run("selectors", func(t *testing.T) {
		out, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := out.Labels["mutated"]; ok || hook.count("/mutate", admissionv1.Create, "p1") != 0 {
			t.Fatalf("namespace selector: object in an unlabelled namespace mutated (%v)", out.Labels)
		}
		out, err = cs.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s1", Labels: map[string]string{"skip": ""}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := out.Labels["mutated"]; ok || hook.count("/mutate", admissionv1.Create, "s1") != 0 {
			t.Fatalf("object selector: skipped object mutated (%v)", out.Labels)
		}
	})
	t.Run("deny create with the webhook's code and message", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d1", Labels: map[string]string{"deny": "yes"}}}, metav1.CreateOptions{})
		var st apierrors.APIStatus
		if err == nil || !errors.As(err, &st) {
			t.Fatalf("err %v, want a Status", err)
		}
		want := `admission webhook "deny.hacp.test" denied the request: objects labelled deny=yes are not welcome here`
		if st.Status().Code != http.StatusNotAcceptable || st.Status().Message != want {
			t.Fatalf("status %d %q, want 406 %q", st.Status().Code, st.Status().Message, want)
		}
		if _, err := cs.CoreV1().ConfigMaps("plain").Get(ctx, "d1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("denied object stored: %v", err)
		}
	})
	t.Run("deny update and delete", func(t *testing.T) {
		cm, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "u1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels = map[string]string{"deny": "yes"}
		if _, err := cs.CoreV1().ConfigMaps("plain").Update(ctx, cm, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "denied the request") {
			t.Fatalf("update: %v, want denied", err)
		}
		// Labelled behind the webhook's back is impossible; a delete is judged on the old object.
		if err := cs.CoreV1().ConfigMaps("plain").Delete(ctx, "u1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete of an allowed object: %v", err)
		}
		if hook.count("/deny", admissionv1.Delete, "u1") != 1 {
			t.Fatalf("the validating webhook saw %d deletes of u1, want 1", hook.count("/deny", admissionv1.Delete, "u1"))
		}
	})
	t.Run("kubectl sees the denial", func(t *testing.T) {
		k := newKubectlEnv(t, s.KubeconfigPath())
		f := k.file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k1\n  namespace: plain\n  labels:\n    deny: \"yes\"\n")
		k.fails(`admission webhook "deny.hacp.test" denied the request: objects labelled deny=yes are not welcome here`, "create", "-f", f)
		out := k.ok("create", "configmap", "k2", "-n", "hooked", "-o", "jsonpath={.metadata.labels.mutated}")
		if out != "yes" {
			t.Fatalf("kubectl create: mutated label %q, want yes", out)
		}
	})
	t.Run("dry run reaches webhooks without side effects", func(t *testing.T) {
		out, err := cs.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry1"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || out.Labels["mutated"] != "yes" {
			t.Fatalf("dry run: %v %v", out, err)
		}
		hook.mu.Lock()
		dry := hook.dryRun["dry1"]
		hook.mu.Unlock()
		if !dry {
			t.Fatal("the webhook was not told dryRun=true")
		}
		if _, err := cs.CoreV1().ConfigMaps("hooked").Get(ctx, "dry1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("dry-run object stored: %v", err)
		}
	})
	t.Run("reinvocation IfNeeded", func(t *testing.T) {
		// b-counter runs after a-mutate... and z-counter after both; b asks to be reinvoked,
		// so z's change makes it run once more: count ends "xxx".
		for _, name := range []string{"b-counter", "z-counter"} {
			c := &admissionregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
				Webhooks: []admissionregv1.MutatingWebhook{{
					Name:                    name + ".hacp.test",
					ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To(hook.srv.URL + "/counter"), CABundle: hook.caPEM},
					Rules:                   configMapRule(admissionregv1.Create),
					ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"counted": "yes"}},
					SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
					AdmissionReviewVersions: []string{"v1"},
				}}}
			if name == "b-counter" {
				c.Webhooks[0].ReinvocationPolicy = ptr.To(admissionregv1.IfNeededReinvocationPolicy)
			}
			if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
		i := 0
		eventuallyOK(t, "both counters active", func() error {
			i++
			out, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i), Labels: map[string]string{"counted": "yes"}}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if got := out.Labels["count"]; got != "xxx" {
				return fmt.Errorf("count label %q, want xxx", got)
			}
			return nil
		})
	})
	t.Run("failurePolicy", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "https://" + ln.Addr().String() + "/deny"
		ln.Close() // nothing listens there any more
		for _, tc := range []struct {
			name   string
			url    string
			policy admissionregv1.FailurePolicyType
		}{
			{"down-ignore", down, admissionregv1.Ignore},
			{"hang-ignore", hook.srv.URL + "/hang", admissionregv1.Ignore},
			{"down-fail", down, admissionregv1.Fail},
		} {
			c := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
				Webhooks: []admissionregv1.ValidatingWebhook{{
					Name:                    tc.name + ".hacp.test",
					ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To(tc.url), CABundle: hook.caPEM},
					Rules:                   configMapRule(admissionregv1.Create),
					ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"policy": tc.name}},
					FailurePolicy:           ptr.To(tc.policy),
					TimeoutSeconds:          ptr.To(int32(1)),
					SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
					AdmissionReviewVersions: []string{"v1"},
				}}}
			if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Fail: once the configuration is in, creates answer 500 naming the webhook.
		i := 0
		eventuallyOK(t, "down-fail refuses", func() error {
			i++
			_, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("f%d", i), Labels: map[string]string{"policy": "down-fail"}}}, metav1.CreateOptions{})
			if err == nil {
				return fmt.Errorf("created")
			}
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "down-fail.hacp.test"`) {
				t.Fatalf("err %v, want 500 failed calling webhook", err)
			}
			return nil
		})
		for _, name := range []string{"down-ignore", "hang-ignore"} {
			if !eventuallyTrue(func() bool { return s.Webhooks().Synced(false, name) }) {
				t.Fatalf("configuration %s never reached the cache", name)
			}
			if _, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok-" + name, Labels: map[string]string{"policy": name}}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: %v, want the failure ignored", name, err)
			}
		}
	})
	t.Run("configuration removed live", func(t *testing.T) {
		if err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "deny", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		i := 0
		eventuallyOK(t, "deny webhook gone", func() error {
			i++
			_, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gone%d", i), Labels: map[string]string{"deny": "yes"}}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
	})
}

// eventuallyTrue polls cond for up to 10 seconds.
func eventuallyTrue(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// TestAdmissionAlwaysDeny: --enable-admission-plugins turns on a plugin outside the
// default set, whose denial is upstream's 403.
func TestAdmissionAlwaysDeny(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.EnableAdmissionPlugins = []string{"AlwaysDeny"} })
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	want := `configmaps "x" is forbidden: admission control is denying all modifications`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("err %v, want 403 %q", err, want)
	}
	// A delete has no new object: upstream names it "Unknown".
	err = cs.RbacV1().ClusterRoles().Delete(context.Background(), "view", metav1.DeleteOptions{})
	want = `clusterroles.rbac.authorization.k8s.io "Unknown" is forbidden: admission control is denying all modifications`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("delete: %v, want 403 %q", err, want)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(context.Background(), "view", metav1.GetOptions{}); err != nil {
		t.Fatalf("denied delete happened: %v", err)
	}
	// Reads are not admission's business.
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

var _ rest.WarningHandler = (*warnings)(nil)

// TestAdmissionFlags: unknown or unimplemented plugin names refuse the configuration (the
// program exits 2 with the message).
func TestAdmissionFlags(t *testing.T) {
	for _, tc := range []struct {
		enable, disable []string
		want            string
	}{
		{[]string{"NoSuchPlugin"}, nil, `enable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		{nil, []string{"NoSuchPlugin"}, `disable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		{[]string{"AlwaysPullImages"}, nil, `"AlwaysPullImages" is not implemented by hacp`},
	} {
		cfg := server.DefaultConfig()
		cfg.EnableAdmissionPlugins, cfg.DisableAdmissionPlugins = tc.enable, tc.disable
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("enable %v disable %v: %v, want %q", tc.enable, tc.disable, err, tc.want)
		}
	}
	cfg := server.DefaultConfig()
	cfg.DisableAdmissionPlugins = []string{"TaintNodesByCondition", "MutatingAdmissionWebhook"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("disabling known plugins: %v", err)
	}
}

// createEndpoints points the hook Service at the test webhook on loopback port (core/v1
// Endpoints, which the webhook resolver reads), through a relay on addr: an endpoint may
// not be a loopback address.
func createEndpoints(ctx context.Context, t *testing.T, cs kubernetes.Interface, addr netip.Addr, port int) error {
	relay := netns.ForwardTCP(t, addr, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	//lint:ignore SA1019 the resolver reads core/v1 Endpoints, which hacp keeps for every Service
	subsets := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: addr.String()}}, Ports: []corev1.EndpointPort{{Name: "https", Port: int32(relay)}}}}
	//lint:ignore SA1019 as above
	_, err := cs.CoreV1().Endpoints("default").Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "hook"}, Subsets: subsets}, metav1.CreateOptions{})
	return err
}
