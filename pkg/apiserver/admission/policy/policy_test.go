package policy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/policy"
	"github.com/hacp/hacp/pkg/apiserver/controlplane"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// env is a registry on a real etcd and the plugin on its informers.
type env struct {
	t   *testing.T
	ctx context.Context
	reg *controlplane.Registry
	p   *policy.Plugin
}

func newEnv(t *testing.T) *env {
	t.Helper()
	reg := controlplane.New(etcdtest.Client(t), controlplane.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); reg.Wait() })
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := policy.New(policy.Config{
		Informers: reg.Informers(),
		ParamResource: func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, bool) {
			if gvk == corev1.SchemeGroupVersion.WithKind("ConfigMap") {
				return corev1.SchemeGroupVersion.WithResource("configmaps"), true, true
			}
			return schema.GroupVersionResource{}, false, false
		},
		GetNamespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			obj, err := reg.Resource(schema.GroupResource{Resource: "namespaces"}).Store.Get(ctx, "", name, &metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return obj.(*corev1.Namespace), nil
		},
	})
	p.Start(ctx)
	e := &env{t: t, ctx: ctx, reg: reg, p: p}
	e.create("namespaces", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}})
	e.create("namespaces", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev", Labels: map[string]string{"env": "dev"}}})
	return e
}

func (e *env) store(resource string) *registry.Store {
	gr := schema.GroupResource{Resource: resource}
	if strings.Contains(resource, "admissionpolic") {
		gr.Group = "admissionregistration.k8s.io"
	}
	res := e.reg.Resource(gr)
	if res == nil {
		e.t.Fatalf("no resource %s", gr)
	}
	return res.Store
}

func (e *env) create(resource, ns string, obj runtime.Object) {
	e.t.Helper()
	if _, err := e.store(resource).Create(e.ctx, ns, "", obj, &metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create %s: %v", resource, err)
	}
}

// bind creates the policy and binding and waits until the plugin enforces them; both are
// deleted (and no longer enforced) when the test ends.
func (e *env) bind(t *testing.T, pol *admissionregv1.ValidatingAdmissionPolicy, b *admissionregv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	e.create("validatingadmissionpolicies", "", pol)
	e.create("validatingadmissionpolicybindings", "", b)
	e.waitFor(func() bool { return e.p.Enforced(pol.Name, "", b.Name) })
	t.Cleanup(func() {
		_, _, _ = e.store("validatingadmissionpolicybindings").Delete(e.ctx, "", b.Name, &metav1.DeleteOptions{})
		_, _, _ = e.store("validatingadmissionpolicies").Delete(e.ctx, "", pol.Name, &metav1.DeleteOptions{})
		e.waitFor(func() bool { return !e.p.Enforced(pol.Name, "", b.Name) })
	})
}

func (e *env) waitFor(cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatal("condition not met in 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func configMapRules(ops ...admissionregv1.OperationType) []admissionregv1.NamedRuleWithOperations {
	if len(ops) == 0 {
		ops = []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update}
	}
	return []admissionregv1.NamedRuleWithOperations{{RuleWithOperations: admissionregv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}
}

func vap(name string, spec admissionregv1.ValidatingAdmissionPolicySpec) *admissionregv1.ValidatingAdmissionPolicy {
	if spec.MatchConstraints == nil {
		spec.MatchConstraints = &admissionregv1.MatchResources{ResourceRules: configMapRules()}
	}
	return &admissionregv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func binding(name, policyName string, mr *admissionregv1.MatchResources, actions ...admissionregv1.ValidationAction) *admissionregv1.ValidatingAdmissionPolicyBinding {
	if len(actions) == 0 {
		actions = []admissionregv1.ValidationAction{admissionregv1.Deny}
	}
	return &admissionregv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policyName, MatchResources: mr, ValidationActions: actions}}
}

func prodOnly() *admissionregv1.MatchResources {
	return &admissionregv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
}

// cmCreate is the admission of a ConfigMap's create.
func cmCreate(ns, name string, labels, data map[string]string) *admission.Attributes {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: data}
	return &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: ns, Name: name, Object: cm,
		Options: &metav1.CreateOptions{}, User: &request.User{Name: "alice", Groups: []string{"system:authenticated"}}}
}

func forbidLabel() admissionregv1.ValidatingAdmissionPolicySpec {
	return admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
		Expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels) || object.metadata.labels['forbidden'] != 'true'",
		Message:    "forbidden configmaps are not allowed"}}}
}

// wantStatus checks err is a Status with code and the exact message (nil err for code 0).
func wantStatus(t *testing.T, err error, code int32, reason metav1.StatusReason, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("admitted expected, got %v", err)
		}
		return
	}
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("got %v (%T), want a %d Status", err, err, code)
	}
	st := se.Status()
	if st.Code != code || st.Reason != reason || st.Message != msg {
		t.Fatalf("got %d %s %q,\nwant %d %s %q", st.Code, st.Reason, st.Message, code, reason, msg)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != strings.TrimPrefix(msg, `configmaps "x" is forbidden: `) {
		t.Fatalf("causes %+v, want the one message", st.Details)
	}
}

// TestDenyInBoundNamespace is the case: a policy forbidding ConfigMaps labelled
// forbidden=true, bound to the namespaces labelled env=prod, refuses such a ConfigMap there
// with upstream's 422 and message, and admits it elsewhere and unlabelled.
func TestDenyInBoundNamespace(t *testing.T) {
	e := newEnv(t)
	e.bind(t, vap("no-forbidden", forbidLabel()), binding("no-forbidden-prod", "no-forbidden", prodOnly()))
	forbidden := map[string]string{"forbidden": "true"}
	err := e.p.Validate(e.ctx, cmCreate("prod", "x", forbidden, nil))
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `configmaps "x" is forbidden: ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-prod' denied request: forbidden configmaps are not allowed`)
	wantStatus(t, e.p.Validate(e.ctx, cmCreate("dev", "x", forbidden, nil)), 0, "", "")
	wantStatus(t, e.p.Validate(e.ctx, cmCreate("prod", "x", map[string]string{"forbidden": "no"}, nil)), 0, "", "")
	wantStatus(t, e.p.Validate(e.ctx, cmCreate("prod", "x", nil, nil)), 0, "", "")
}

// TestValidations covers the expressions' features: messages, reasons, variables, params,
// matchConditions, failurePolicy on compile and runtime errors, and the cost limit.
func TestValidations(t *testing.T) {
	e := newEnv(t)
	e.create("configmaps", "prod", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits", Labels: map[string]string{"kind": "limits"}}, Data: map[string]string{"max": "2"}})
	e.create("configmaps", "dev", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits", Labels: map[string]string{"kind": "limits"}}, Data: map[string]string{"max": "5"}})
	cmKind := &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	three := map[string]string{"a": "1", "b": "2", "c": "3"}
	const prefix = `configmaps "x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: `
	big := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name    string
		spec    admissionregv1.ValidatingAdmissionPolicySpec
		binding *admissionregv1.ValidatingAdmissionPolicyBinding
		ns      string
		data    map[string]string
		code    int32
		reason  metav1.StatusReason
		msg     string
	}{
		{name: "no message: the expression", spec: admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "size(object.data) < 3"}}},
			data: three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "failed expression: size(object.data) < 3"},
		{name: "messageExpression and reason Forbidden", spec: admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression: "size(object.data) < 3", Message: "static", MessageExpression: "'too many keys: ' + string(size(object.data))", Reason: ptr.To(metav1.StatusReasonForbidden)}}},
			data: three, code: 403, reason: metav1.StatusReasonForbidden, msg: prefix + "too many keys: 3"},
		{name: "messageExpression failing falls back to message", spec: admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression: "size(object.data) < 3", Message: "static", MessageExpression: "string(object.data.missing)"}}},
			data: three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "static"},
		{name: "variables", spec: admissionregv1.ValidatingAdmissionPolicySpec{
			Variables:   []admissionregv1.Variable{{Name: "keys", Expression: "size(object.data)"}, {Name: "many", Expression: "variables.keys > 2"}},
			Validations: []admissionregv1.Validation{{Expression: "!variables.many", MessageExpression: "'keys: ' + string(variables.keys)"}}},
			data: three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "keys: 3"},
		{name: "request, namespaceObject and oldObject", spec: admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression:        "oldObject == null && request.userInfo.username == 'alice' && namespaceObject.metadata.labels['env'] == 'prod' && request.operation == 'CREATE'",
			MessageExpression: "'denied for ' + request.userInfo.username"}}},
			code: 0},
		{name: "params by name in the request's namespace", spec: admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: cmKind,
			Validations: []admissionregv1.Validation{{Expression: "size(object.data) <= int(params.data.max)", MessageExpression: "'at most ' + params.data.max + ' keys (' + params.kind + ')'"}}},
			binding: &admissionregv1.ValidatingAdmissionPolicyBinding{Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{ParamRef: &admissionregv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}}},
			data:    three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "at most 2 keys (ConfigMap)"},
		{name: "params by name, other namespace's limit", spec: admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: cmKind,
			Validations: []admissionregv1.Validation{{Expression: "size(object.data) <= int(params.data.max)"}}},
			binding: &admissionregv1.ValidatingAdmissionPolicyBinding{Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{ParamRef: &admissionregv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}}},
			ns:      "dev", data: three, code: 0},
		{name: "params by selector in paramRef.namespace", spec: admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: cmKind,
			Validations: []admissionregv1.Validation{{Expression: "size(object.data) <= int(params.data.max)"}}},
			binding: &admissionregv1.ValidatingAdmissionPolicyBinding{Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{ParamRef: &admissionregv1.ParamRef{Namespace: "prod",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "limits"}}, ParameterNotFoundAction: ptr.To(admissionregv1.AllowAction)}}},
			ns: "dev", data: three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "failed expression: size(object.data) <= int(params.data.max)"},
		{name: "missing param, Deny", spec: admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: cmKind, Validations: []admissionregv1.Validation{{Expression: "true"}}},
			binding: &admissionregv1.ValidatingAdmissionPolicyBinding{Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{ParamRef: &admissionregv1.ParamRef{Name: "nope", ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}}},
			code:    422, reason: metav1.StatusReasonInvalid, msg: prefix + "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "missing param, Allow", spec: admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: cmKind, Validations: []admissionregv1.Validation{{Expression: "false"}}},
			binding: &admissionregv1.ValidatingAdmissionPolicyBinding{Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{ParamRef: &admissionregv1.ParamRef{Name: "nope", ParameterNotFoundAction: ptr.To(admissionregv1.AllowAction)}}},
			code:    0},
		{name: "paramKind not served", spec: admissionregv1.ValidatingAdmissionPolicySpec{ParamKind: &admissionregv1.ParamKind{APIVersion: "example.com/v1", Kind: "Nope"}, Validations: []admissionregv1.Validation{{Expression: "true"}}},
			code: 422, reason: metav1.StatusReasonInvalid, msg: `configmaps "x" is forbidden: ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'`},
		{name: "matchConditions false: skipped", spec: admissionregv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregv1.MatchCondition{{Name: "big", Expression: "size(object.data) > 5"}},
			Validations:     []admissionregv1.Validation{{Expression: "false"}}},
			data: three, code: 0},
		{name: "matchConditions error, Fail", spec: admissionregv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregv1.MatchCondition{{Name: "bad", Expression: "object.data.missing == 'x'"}},
			Validations:     []admissionregv1.Validation{{Expression: "false"}}},
			data: three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "expression 'object.data.missing == 'x'' resulted in error: no such key: missing"},
		{name: "runtime error, Fail", spec: admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{Expression: "object.data.missing == 'x'"}}},
			data: three, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "expression 'object.data.missing == 'x'' resulted in error: no such key: missing"},
		{name: "runtime error, Ignore", spec: admissionregv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregv1.Ignore), Validations: []admissionregv1.Validation{{Expression: "object.data.missing == 'x'"}}},
			data: three, code: 0},
		{name: "cost budget exceeded", spec: admissionregv1.ValidatingAdmissionPolicySpec{Validations: []admissionregv1.Validation{{
			Expression: "[1,2,3,4,5,6,7,8,9,10].all(i, [1,2,3,4,5,6,7,8,9,10].all(j, object.data.big.contains('b') == false))"}}},
			data: map[string]string{"big": big}, code: 422, reason: metav1.StatusReasonInvalid, msg: prefix + "expression '[1,2,3,4,5,6,7,8,9,10].all(i, [1,2,3,4,5,6,7,8,9,10].all(j, object.data.big.contains('b') == false))' resulted in error: operation cancelled: actual cost limit exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := binding("b", "p", nil)
			if tc.binding != nil {
				b.Spec.ParamRef = tc.binding.Spec.ParamRef
			}
			e.bind(t, vap("p", tc.spec), b)
			ns := tc.ns
			if ns == "" {
				ns = "prod"
			}
			err := e.p.Validate(e.ctx, cmCreate(ns, "x", nil, tc.data))
			wantStatus(t, err, tc.code, tc.reason, tc.msg)
		})
	}
}

// TestMatching covers matchConstraints and binding matchResources: operations, resource
// patterns with subresources, resourceNames, excludeResourceRules, object selectors.
func TestMatching(t *testing.T) {
	e := newEnv(t)
	deny := []admissionregv1.Validation{{Expression: "false", Message: "no"}}
	rule := func(res string, ops ...admissionregv1.OperationType) admissionregv1.NamedRuleWithOperations {
		return admissionregv1.NamedRuleWithOperations{RuleWithOperations: admissionregv1.RuleWithOperations{Operations: ops,
			Rule: admissionregv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{res}}}}
	}
	all := admissionregv1.OperationAll
	for _, tc := range []struct {
		name    string
		match   admissionregv1.MatchResources
		binding *admissionregv1.MatchResources
		attrs   func() *admission.Attributes
		denied  bool
	}{
		{"create matches CREATE", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("configmaps", admissionregv1.Create)}}, nil,
			func() *admission.Attributes { return cmCreate("prod", "x", nil, nil) }, true},
		{"update does not match CREATE", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("configmaps", admissionregv1.Create)}}, nil,
			func() *admission.Attributes {
				a := cmCreate("prod", "x", nil, nil)
				a.Operation, a.OldObject = admission.Update, a.Object
				return a
			}, false},
		{"* does not match a subresource", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*", all)}}, nil,
			func() *admission.Attributes { a := cmCreate("prod", "x", nil, nil); a.Subresource = "status"; return a }, false},
		{"*/* matches a subresource", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*/*", all)}}, nil,
			func() *admission.Attributes { a := cmCreate("prod", "x", nil, nil); a.Subresource = "status"; return a }, true},
		{"resourceNames", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{func() admissionregv1.NamedRuleWithOperations {
			r := rule("configmaps", all)
			r.ResourceNames = []string{"y"}
			return r
		}()}}, nil, func() *admission.Attributes { return cmCreate("prod", "x", nil, nil) }, false},
		{"excludeResourceRules", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*", all)},
			ExcludeResourceRules: []admissionregv1.NamedRuleWithOperations{rule("configmaps", all)}}, nil,
			func() *admission.Attributes { return cmCreate("prod", "x", nil, nil) }, false},
		{"objectSelector", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*", all)},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}}, nil,
			func() *admission.Attributes { return cmCreate("prod", "x", map[string]string{"checked": "yes"}, nil) }, true},
		{"objectSelector, not labelled", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*", all)},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}}, nil,
			func() *admission.Attributes { return cmCreate("prod", "x", nil, nil) }, false},
		{"binding narrows to secrets", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*", all)}},
			&admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("secrets", all)}},
			func() *admission.Attributes { return cmCreate("prod", "x", nil, nil) }, false},
		{"binding's namespaceSelector", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("*", all)}}, prodOnly(),
			func() *admission.Attributes { return cmCreate("dev", "x", nil, nil) }, false},
		{"namespace itself, by its labels", admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{rule("namespaces", all)},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, nil,
			func() *admission.Attributes {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"env": "prod"}}}
				return &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"),
					Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "x", Object: ns}
			}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := vap("p", admissionregv1.ValidatingAdmissionPolicySpec{MatchConstraints: &tc.match, Validations: deny})
			e.bind(t, pol, binding("b", "p", tc.binding))
			err := e.p.Validate(e.ctx, tc.attrs())
			if denied := err != nil; denied != tc.denied {
				t.Fatalf("denied %v (%v), want %v", denied, err, tc.denied)
			}
		})
	}
}

// TestValidationActions: Warn sends upstream's warning, Audit records the failure as an
// audit annotation, neither refuses; auditAnnotations are published under the policy's name.
func TestValidationActions(t *testing.T) {
	e := newEnv(t)
	spec := forbidLabel()
	spec.AuditAnnotations = []admissionregv1.AuditAnnotation{{Key: "who", ValueExpression: "request.userInfo.username"}}
	e.bind(t, vap("p", spec), binding("b", "p", nil, admissionregv1.Warn, admissionregv1.Audit))
	var warnings []string
	ctx := request.WithWarnings(e.ctx, func(m string) { warnings = append(warnings, m) })
	ctx, ann := request.WithAnnotations(ctx)
	if err := e.p.Validate(ctx, cmCreate("prod", "x", map[string]string{"forbidden": "true"}, nil)); err != nil {
		t.Fatal(err)
	}
	want := "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': forbidden configmaps are not allowed"
	if len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("warnings %q, want [%q]", warnings, want)
	}
	got := ann.Map()
	wantFailure := `[{"message":"forbidden configmaps are not allowed","policy":"p","binding":"b","expressionIndex":0,"validationActions":["Warn","Audit"]}]`
	if got["validation.policy.admission.k8s.io/validation_failure"] != wantFailure || got["p/who"] != "alice" {
		t.Fatalf("annotations %v", got)
	}
}
