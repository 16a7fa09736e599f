package webhook

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAuditAnnotationsAndWarnings: a real TLS webhook's audit annotations reach the
// request's annotation set prefixed with the webhook's name, with upstream's mutation
// annotation, and its warnings reach the request's warning sink.
func TestAuditAnnotationsAndWarnings(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&rev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true,
			Patch: []byte(`[{"op":"add","path":"/data","value":{"k":"v"}}]`), PatchType: &pt,
			Warnings: []string{"careful"}, AuditAnnotations: map[string]string{"decision": "patched"}}
		rev.Request = nil
		_ = json.NewEncoder(w).Encode(&rev)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	d := New(Config{})
	url := srv.URL
	h := &hook{config: "cfg", name: "patch.hacp.test", clientConfig: admissionregv1.WebhookClientConfig{URL: &url, CABundle: ca},
		rules: []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Create},
			Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		reviewVersions: []string{"v1"}, sideEffects: admissionregv1.SideEffectClassNone, failurePolicy: admissionregv1.Fail, timeout: 5e9}
	d.mutatingHooks.Store(&[]*hook{h})

	ctx, ann := request.WithAnnotations(t.Context())
	var warned []string
	ctx = request.WithWarnings(ctx, func(m string) { warned = append(warned, m) })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	a := &admission.Attributes{Operation: admission.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Kind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: "c", Object: cm}
	if err := d.Mutating().Admit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "v" {
		t.Fatalf("patch not applied in place: %+v", cm)
	}
	got := ann.Map()
	if got["patch.hacp.test/decision"] != "patched" {
		t.Fatalf("annotations %v, want patch.hacp.test/decision=patched", got)
	}
	if got["mutation.webhook.admission.k8s.io/round_0_index_0"] != `{"configuration":"cfg","webhook":"patch.hacp.test","mutated":true}` {
		t.Fatalf("mutation annotation %q", got["mutation.webhook.admission.k8s.io/round_0_index_0"])
	}
	if len(warned) != 1 || warned[0] != "careful" {
		t.Fatalf("warnings %v", warned)
	}
}
