package upstream_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestValidatingAdmissionPolicyAsKubeAPIServer: the same ValidatingAdmissionPolicies and
// bindings, then the same requests, get the same answers from hacp as from kube-apiserver
// (upstream.KubernetesVersion): codes, reasons, messages, causes and warnings, for denials
// bound to a namespace, messageExpression and reasons, Warn, params found and missing,
// variables, authorizer checks, runtime errors under failurePolicy Fail and Ignore, deletes
// and generateName.
func TestValidatingAdmissionPolicyAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	want := vapSteps(t, kas.config)
	got := vapSteps(t, servertest.RestConfig(t, hacp))
	sameSteps(t, got, want)
}

// warningRecorder keeps the Warning headers a client was sent.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// vapEnv is one server under test.
type vapEnv struct {
	t     *testing.T
	cs    kubernetes.Interface
	warns *warningRecorder
	seen  []string
}

// see records what a step saw: the error as code, reason, message and causes, and the
// warnings.
func (e *vapEnv) see(step string, err error) {
	// A generated name differs between the servers.
	out := step + ": " + generatedName.ReplaceAllString(describeStatus(err), "gen-*")
	for _, w := range e.warns.take() {
		out += " warning=" + w
	}
	e.seen = append(e.seen, out)
}

var generatedName = regexp.MustCompile(`gen-[a-z0-9]{5}`)

func describeStatus(err error) string {
	if err == nil {
		return "ok"
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return err.Error()
	}
	s := st.Status()
	out := fmt.Sprintf("%d %s %q", s.Code, s.Reason, s.Message)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out += fmt.Sprintf(" [%s %q %q]", c.Type, c.Field, c.Message)
		}
	}
	return out
}

func vapSteps(t *testing.T, rc *rest.Config) []string {
	t.Helper()
	rc = rest.CopyConfig(rc)
	e := &vapEnv{t: t, warns: &warningRecorder{}}
	rc.WarningHandler = e.warns
	e.cs = kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	for ns, env := range map[string]string{"prod": "prod", "dev": "dev", "reasons": "reasons", "warn": "warn", "params": "params", "params-store": "", "errors": "errors", "del": "del"} {
		_, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"env": env}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cs.CoreV1().ConfigMaps("del").Create(ctx, cm("keep", 1, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := vapPolicies()[0].policy.DeepCopy()
	bad.Name = "bad"
	// (A variable name that is no CEL identifier is worded differently by 1.33 and 1.37.)
	bad.Spec.Variables = []admissionregv1.Variable{{Name: "v", Expression: "object.nope +"}}
	bad.Spec.MatchConditions = []admissionregv1.MatchCondition{{Name: "m", Expression: "params.x"}}
	bad.Spec.Validations = []admissionregv1.Validation{{Expression: "nope == 1"}, {Expression: "'x'", MessageExpression: "1", Reason: ptr.To(metav1.StatusReasonConflict)}}
	bad.Spec.AuditAnnotations = []admissionregv1.AuditAnnotation{{Key: "k", ValueExpression: "1"}}
	_, err := e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, bad, metav1.CreateOptions{})
	e.see("create a policy whose expressions do not compile", err)
	for _, p := range vapPolicies() {
		_, err := e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p.policy, metav1.CreateOptions{})
		e.see("create policy "+p.policy.Name, err)
		_, err = e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, p.binding, metav1.CreateOptions{})
		e.see("create binding "+p.binding.Name, err)
	}
	// A policy takes effect once the server's informers see it: wait for each to deny.
	for _, probe := range []struct{ ns, label string }{{"prod", "forbidden"}, {"reasons", ""}, {"params", ""}, {"errors", ""}} {
		e.waitDenied(probe.ns, probe.label)
	}
	e.waitWarned()
	e.waitDeleteDenied()
	e.steps(ctx)
	return e.seen
}

// cm is a ConfigMap with n keys, labelled forbidden=true when forbidden.
func cm(name string, n int, forbidden bool) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{}}
	for i := range n {
		c.Data[fmt.Sprintf("k%d", i)] = "v"
	}
	if forbidden {
		c.Labels = map[string]string{"forbidden": "true"}
	}
	return c
}

// waitDenied waits until a dry-run create of a 3-key ConfigMap (labelled forbidden=true
// when label is set) in ns is refused.
func (e *vapEnv) waitDenied(ns, label string) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := e.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm("probe", 3, label != ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the policy for namespace %s never took effect (last: %v)", ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventually waits until cond holds.
func (e *vapEnv) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not in 60s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitDeleteDenied waits until a dry-run delete of del/keep is refused.
func (e *vapEnv) waitDeleteDenied() {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := e.cs.CoreV1().ConfigMaps("del").Delete(context.Background(), "keep", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the delete policy never took effect (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitWarned waits until a dry-run create in namespace warn draws the policy's warning.
func (e *vapEnv) waitWarned() {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := e.cs.CoreV1().ConfigMaps("warn").Create(context.Background(), cm("probe", 3, false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if w := e.warns.take(); err == nil && len(w) > 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the Warn policy never took effect (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *vapEnv) steps(ctx context.Context) {
	cms := func(ns string) func(*corev1.ConfigMap) error {
		return func(c *corev1.ConfigMap) error {
			_, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, c, metav1.CreateOptions{})
			return err
		}
	}
	e.see("forbidden in prod", cms("prod")(cm("x", 1, true)))
	e.see("forbidden in dev", cms("dev")(cm("x", 1, true)))
	e.see("unlabelled in prod", cms("prod")(cm("y", 1, false)))
	gen := cm("", 1, true)
	gen.GenerateName = "gen-"
	e.see("forbidden with generateName in prod", cms("prod")(gen))
	if c, err := e.cs.CoreV1().ConfigMaps("prod").Get(ctx, "y", metav1.GetOptions{}); err == nil {
		c.Labels = map[string]string{"forbidden": "true"}
		_, err = e.cs.CoreV1().ConfigMaps("prod").Update(ctx, c, metav1.UpdateOptions{})
		e.see("label forbidden on update in prod", err)
	}
	e.see("three keys with reason Forbidden", cms("reasons")(cm("x", 3, false)))
	e.see("two keys with reason Forbidden", cms("reasons")(cm("y", 2, false)))
	e.see("three keys with Warn and Audit", cms("warn")(cm("x", 3, false)))
	e.see("params missing, Deny", cms("params")(cm("x", 3, false)))
	_, err := e.cs.CoreV1().ConfigMaps("params-store").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"max": "2"}}, metav1.CreateOptions{})
	e.see("create the param", err)
	// A param is found through the server's informer once it has it.
	e.eventually("the param is found", func() bool {
		_, err := e.cs.CoreV1().ConfigMaps("params").Create(ctx, cm("probe", 3, false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && !strings.Contains(err.Error(), "no params found")
	})
	e.see("three keys over the param's limit", cms("params")(cm("y", 3, false)))
	e.see("two keys within the param's limit", cms("params")(cm("z", 2, false)))
	e.see("runtime error, Fail", cms("errors")(cm("x", 3, false)))
	e.see("no error, variables", cms("errors")(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "y"}, Data: map[string]string{"missing": "x"}}))
	e.see("delete keep", e.cs.CoreV1().ConfigMaps("del").Delete(ctx, "keep", metav1.DeleteOptions{}))
}

type vapPolicy struct {
	policy  *admissionregv1.ValidatingAdmissionPolicy
	binding *admissionregv1.ValidatingAdmissionPolicyBinding
}

// vapPolicies are the policies of the steps, each bound to the namespaces labelled env=<its
// namespace>.
func vapPolicies() []vapPolicy {
	rules := func(ops ...admissionregv1.OperationType) *admissionregv1.MatchResources {
		return &admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{{RuleWithOperations: admissionregv1.RuleWithOperations{
			Operations: ops, Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}}
	}
	cu := []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update}
	mk := func(name, env string, spec admissionregv1.ValidatingAdmissionPolicySpec, actions []admissionregv1.ValidationAction, ref *admissionregv1.ParamRef) vapPolicy {
		if spec.MatchConstraints == nil {
			spec.MatchConstraints = rules(cu...)
		}
		if actions == nil {
			actions = []admissionregv1.ValidationAction{admissionregv1.Deny}
		}
		return vapPolicy{
			policy: &admissionregv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
			binding: &admissionregv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + env},
				Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions, ParamRef: ref,
					MatchResources: &admissionregv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}},
		}
	}
	return []vapPolicy{
		mk("no-forbidden", "prod", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels) || object.metadata.labels['forbidden'] != 'true'",
			Message:    "configmaps labelled forbidden=true are not allowed"}}}, nil, nil),
		mk("few-keys", "reasons", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression: "size(object.data) < 3", MessageExpression: "'too many keys: ' + string(size(object.data))", Reason: ptr.To(metav1.StatusReasonForbidden)}}}, nil, nil),
		mk("few-keys-warn", "warn", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "size(object.data) < 3"}}},
			[]admissionregv1.ValidationAction{admissionregv1.Warn, admissionregv1.Audit}, nil),
		mk("limited", "params", admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			Validations: []admissionregv1.Validation{{Expression: "size(object.data) <= int(params.data.max)", MessageExpression: "'at most ' + params.data.max + ' keys'"}}},
			nil, &admissionregv1.ParamRef{Name: "limits", Namespace: "params-store", ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}),
		mk("runtime-error", "errors", admissionregv1.ValidatingAdmissionPolicySpec{
			Variables:   []admissionregv1.Variable{{Name: "value", Expression: "object.data.missing"}},
			Validations: []admissionregv1.Validation{{Expression: "variables.value == 'x'"}}}, nil, nil),
		mk("runtime-error-ignored", "errors", admissionregv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregv1.Ignore),
			Validations: []admissionregv1.Validation{{Expression: "object.data.other == 'x'"}}}, nil, nil),
		mk("authz", "errors", admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').allowed() && authorizer.requestResource.check('create').allowed()",
			Message:    "the requester may not list secrets"}}}, nil, nil),
		mk("keep", "del", admissionregv1.ValidatingAdmissionPolicySpec{MatchConstraints: rules(admissionregv1.Delete),
			Validations: []admissionregv1.Validation{{Expression: "oldObject.metadata.name != 'keep' && object == null", MessageExpression: "oldObject.metadata.name + ' must stay'"}}}, nil, nil),
	}
}
