package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestAdmissionWebhookMatchConditions: webhooks' CEL matchConditions decide whether a real
// HTTPS webhook is called (object, request, authorizer), an evaluation error follows
// failurePolicy (403 with Fail, skipped with Ignore), and conditions that do not compile or
// are not bool refuse the configuration (422).
func TestAdmissionWebhookMatchConditions(t *testing.T) {
	s := servertest.New(t, nil)
	hook := newHookServer(t)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	const ns = "cond"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "a"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webhook := func(name string, fp admissionregv1.FailurePolicyType, sel map[string]string, conds ...admissionregv1.MatchCondition) admissionregv1.ValidatingWebhook {
		return admissionregv1.ValidatingWebhook{
			Name:                    name,
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To(hook.srv.URL + "/deny"), CABundle: hook.caPEM},
			Rules:                   configMapRule(admissionregv1.Create),
			FailurePolicy:           &fp,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: sel},
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         conds,
		}
	}
	cfg := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "conditions"},
		Webhooks: []admissionregv1.ValidatingWebhook{
			webhook("deny.cond.test", admissionregv1.Fail, map[string]string{"deny": "yes"},
				admissionregv1.MatchCondition{Name: "prefix", Expression: `object.metadata.name.startsWith("hooked-")`},
				admissionregv1.MatchCondition{Name: "request", Expression: `request.operation == "CREATE" && request.namespace == "cond" && request.userInfo.username != ""`},
				admissionregv1.MatchCondition{Name: "namespace", Expression: `namespaceObject.metadata.labels["team"] == "a"`},
				admissionregv1.MatchCondition{Name: "authorizer", Expression: `authorizer.group("").resource("configmaps").namespace(request.namespace).check("create").allowed()`},
			),
			webhook("fail.cond.test", admissionregv1.Fail, map[string]string{"cond": "fail"},
				admissionregv1.MatchCondition{Name: "missing", Expression: `object.data.missing == "x"`}),
			webhook("ignore.cond.test", admissionregv1.Ignore, map[string]string{"cond": "ignore", "deny": "yes"},
				admissionregv1.MatchCondition{Name: "missing", Expression: `object.data.missing == "x"`}),
		}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	deny := map[string]string{"deny": "yes"}
	probe := 0
	eventuallyOK(t, "webhook active", func() error {
		probe++
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm(fmt.Sprintf("hooked-probe-%d", probe), deny), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("not denied yet")
		}
		return nil
	})

	// All conditions true: called, and it denies.
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("hooked-1", deny), metav1.CreateOptions{})
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != http.StatusNotAcceptable ||
		!strings.Contains(err.Error(), `admission webhook "deny.cond.test" denied the request`) {
		t.Fatalf("create hooked-1: %v, want the webhook's 406", err)
	}
	// One condition false: not called.
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("other-1", deny), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create other-1 (prefix condition false): %v", err)
	}
	if n := hook.count("/deny", admissionv1.Create, "other-1"); n != 0 {
		t.Fatalf("webhook called %d times for other-1", n)
	}
	// Evaluation error: failurePolicy Fail refuses with 403, Ignore skips the webhook.
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("err-1", map[string]string{"cond": "fail"}), metav1.CreateOptions{})
	want := `configmaps "err-1" is forbidden: expression 'object.data.missing == "x"' resulted in error: no such key: data`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("create err-1: %v, want 403 %q", err, want)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("ign-1", map[string]string{"cond": "ignore", "deny": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ign-1 (failurePolicy Ignore): %v", err)
	}
	if n := hook.count("/deny", admissionv1.Create, "ign-1") + hook.count("/deny", admissionv1.Create, "err-1"); n != 0 {
		t.Fatalf("webhook called %d times despite condition errors", n)
	}

	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct {
			expr, want string
		}{
			{`object.metadata.name.startsWith(`, `webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name.startsWith(": compilation failed: ERROR: <input>:1:33: Syntax error`},
			{`"x"`, `webhooks[0].matchConditions[0].expression: Invalid value: "\"x\"": must evaluate to bool but got string`},
			{`request.nope == 1`, `webhooks[0].matchConditions[0].expression: Invalid value: "request.nope == 1": compilation failed: ERROR: <input>:1:8: undefined field 'nope'`},
		} {
			bad := &admissionregv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
				Webhooks: []admissionregv1.ValidatingWebhook{webhook("bad.cond.test", admissionregv1.Fail, nil,
					admissionregv1.MatchCondition{Name: "c", Expression: tc.expr})}}
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("expression %s: %v, want 422 with %q", tc.expr, err, tc.want)
			}
		}
		bad := &admissionregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Webhooks: []admissionregv1.MutatingWebhook{{Name: "bad.cond.test",
				ClientConfig: admissionregv1.WebhookClientConfig{URL: ptr.To(hook.srv.URL + "/mutate")}, SideEffects: ptr.To(admissionregv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				MatchConditions:         []admissionregv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "1"}}}}}
		_, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{})
		for _, want := range []string{`webhooks[0].matchConditions[1].name: Duplicate value: "a"`, `webhooks[0].matchConditions[1].expression: Invalid value: "1": must evaluate to bool but got int`} {
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("mutating configuration: %v, want 422 with %q", err, want)
			}
		}
	})
}
