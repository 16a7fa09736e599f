package upstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd/etcdtest"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestMutatingAdmissionPolicyAsKubeAPIServer: the same MutatingAdmissionPolicies and
// bindings, then the same requests, give the same objects (labels, annotations, data,
// containers) and the same errors (code, reason, message, causes) from hacp as from
// kube-apiserver (upstream.KubernetesVersion): ApplyConfiguration and JSONPatch, dry runs,
// updates, matchConditions and variables, params by name (missing with Deny, then found)
// and by selector, failurePolicy Fail on a runtime error (generateName too), Ignore, a
// paramKind nothing serves, expressions that do not compile (refused when written),
// JSONPatch test and error, reinvocationPolicy IfNeeded and a list-map merge into a Pod's
// containers.
func TestMutatingAdmissionPolicyAsKubeAPIServer(t *testing.T) {
	bin := upstream.Binary(t, "kube-apiserver")
	etcd := etcdtest.Start(t)
	kas := startKubeAPIServer(t, bin, etcd.ClientURL())
	hacp := servertest.New(t, nil)
	want := mapSteps(t, kas.config)
	got := mapSteps(t, servertest.RestConfig(t, hacp))
	sameSteps(t, got, want)
}

// mapEnv is one server under test.
type mapEnv struct {
	*vapEnv
	ctx  context.Context
	last string // the last probe's result, for a policy that never takes effect
}

func mapSteps(t *testing.T, rc *rest.Config) []string {
	t.Helper()
	rc = rest.CopyConfig(rc)
	e := &mapEnv{vapEnv: &vapEnv{t: t, warns: &warningRecorder{}}, ctx: context.Background()}
	rc.WarningHandler = e.warns
	e.cs = kubernetes.NewForConfigOrDie(rc)
	for _, ns := range []string{"apply", "json", "cond", "params", "params-store", "sel", "sel-store", "fail", "fail-compile",
		"ignore", "reinv", "jsonerr", "jsontest", "badparam", "other", "pods"} {
		_, err := e.cs.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"env": ns}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	// hacp makes the default ServiceAccount itself; kube-apiserver alone does not.
	_, _ = e.cs.CoreV1().ServiceAccounts("pods").Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}} {
		_, err := e.cs.CoreV1().ConfigMaps("sel-store").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p" + kv[0], Labels: map[string]string{"param": "yes"}},
			Data: map[string]string{"key": kv[0], "value": kv[1]}}, metav1.CreateOptions{})
		e.see("create param "+kv[0], err)
	}
	for _, p := range mapPolicies() {
		_, err := e.cs.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(e.ctx, p.policy, metav1.CreateOptions{})
		e.see("create policy "+p.policy.Name, err)
		_, err = e.cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(e.ctx, p.binding, metav1.CreateOptions{})
		e.see("create binding "+p.binding.Name, err)
	}
	e.waitAll()
	e.steps()
	return e.seen
}

// probeCM is the ConfigMap the steps create.
func probeCM(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"own": "1"}}, Data: map[string]string{"a": "1"}}
}

func summary(c *corev1.ConfigMap) string {
	return fmt.Sprintf("labels=%v annotations=%v data=%v", c.Labels, c.Annotations, c.Data)
}

// waitCM waits until a dry-run create of a probe ConfigMap in ns satisfies done: the
// policy bound there took effect.
func (e *mapEnv) waitCM(ns string, done func(*corev1.ConfigMap, error) bool) {
	e.t.Helper()
	defer func() {
		if e.t.Failed() {
			e.t.Logf("last probe in %s: %s", ns, e.last)
		}
	}()
	e.eventually("the policy for namespace "+ns, func() bool {
		c, err := e.cs.CoreV1().ConfigMaps(ns).Create(e.ctx, probeCM("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !done(c, err) {
			e.last = fmt.Sprint(summary(c), err)
			return false
		}
		return true
	})
}

func (e *mapEnv) waitAll() {
	label := func(k, v string) func(*corev1.ConfigMap, error) bool {
		return func(c *corev1.ConfigMap, err error) bool { return err == nil && c.Labels[k] == v }
	}
	failed := func(_ *corev1.ConfigMap, err error) bool {
		return err != nil && strings.Contains(err.Error(), "denied request")
	}
	e.waitCM("apply", label("mutated", "apply"))
	e.waitCM("json", func(c *corev1.ConfigMap, err error) bool { return err == nil && c.Annotations["mutated"] == "json" })
	e.waitCM("cond", label("name", "probe"))
	e.waitCM("params", failed)
	e.waitCM("sel", func(c *corev1.ConfigMap, err error) bool {
		return err == nil && c.Labels["a"] == "1" && c.Labels["b"] == "2"
	})
	for _, ns := range []string{"fail", "jsonerr", "badparam"} {
		e.waitCM(ns, failed)
	}
	e.waitCM("ignore", label("mutated", "ignore-ok"))
	e.waitCM("reinv", label("mutated", "apply"))
	e.waitCM("jsontest", label("after-test", "yes"))
	e.eventually("the policy for pods", func() bool {
		p, err := e.cs.CoreV1().Pods("pods").Create(e.ctx, probePod(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Spec.Containers[0].ImagePullPolicy == corev1.PullAlways
	})
}

func probePod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}, {Name: "side", Image: "busybox:1.36"}}}}
}

// create creates a probe ConfigMap named name in ns and records the object or the error.
func (e *mapEnv) create(step, ns, name string, opts metav1.CreateOptions) {
	c, err := e.cs.CoreV1().ConfigMaps(ns).Create(e.ctx, probeCM(name), opts)
	e.record(step, c, err)
}

func (e *mapEnv) record(step string, c *corev1.ConfigMap, err error) {
	if err != nil {
		e.see(step, err)
		return
	}
	e.seen = append(e.seen, step+": "+summary(c))
}

func (e *mapEnv) steps() {
	none := metav1.CreateOptions{}
	e.create("apply: dry run", "apply", "x", metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	e.create("apply: create", "apply", "x", none)
	if c, err := e.cs.CoreV1().ConfigMaps("apply").Get(e.ctx, "x", metav1.GetOptions{}); err == nil {
		c.Labels = nil
		c.Data["b"] = "2"
		c, err = e.cs.CoreV1().ConfigMaps("apply").Update(e.ctx, c, metav1.UpdateOptions{})
		e.record("apply: update without the labels", c, err)
	} else {
		e.see("apply: get", err)
	}
	e.create("json: create", "json", "x", none)
	e.create("cond: create skip", "cond", "skip", none)
	e.create("cond: create x", "cond", "x", none)
	e.create("params: missing, Deny", "params", "x", none)
	_, err := e.cs.CoreV1().ConfigMaps("params-store").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Data: map[string]string{"team": "blue"}}, none)
	e.see("create the param", err)
	e.waitCM("params", func(c *corev1.ConfigMap, err error) bool { return err == nil && c.Labels["team"] == "blue" })
	e.create("params: found", "params", "x", none)
	e.create("sel: two params", "sel", "x", none)
	e.create("fail: runtime error", "fail", "x", none)
	gen := probeCM("")
	gen.GenerateName = "gen-"
	_, err = e.cs.CoreV1().ConfigMaps("fail").Create(e.ctx, gen, none)
	e.see("fail: runtime error, generateName", err)
	e.create("fail-compile: the policy was refused", "fail-compile", "x", none)
	e.create("ignore: runtime error ignored", "ignore", "x", none)
	e.create("reinv: IfNeeded counter", "reinv", "x", none)
	e.create("jsonerr: patch error", "jsonerr", "x", none)
	e.create("jsontest: failed test", "jsontest", "x", none)
	e.create("badparam: paramKind not served", "badparam", "x", none)
	e.create("other: untouched", "other", "x", none)
	p, err := e.cs.CoreV1().Pods("pods").Create(e.ctx, probePod(), none)
	if err != nil {
		e.see("pods: containers merged", err)
		return
	}
	var got []string
	for _, c := range p.Spec.Containers {
		got = append(got, c.Name+":"+string(c.ImagePullPolicy))
	}
	e.seen = append(e.seen, fmt.Sprintf("pods: containers merged: %v labels=%v", got, p.Labels))
}

type mapPolicy struct {
	policy  *admissionregv1.MutatingAdmissionPolicy
	binding *admissionregv1.MutatingAdmissionPolicyBinding
}

func applyConf(expr string) admissionregv1.Mutation {
	return admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregv1.ApplyConfiguration{Expression: expr}}
}

func jsonPatchOf(expr string) admissionregv1.Mutation {
	return admissionregv1.Mutation{PatchType: admissionregv1.PatchTypeJSONPatch, JSONPatch: &admissionregv1.JSONPatch{Expression: expr}}
}

// mapPolicies are the policies of the steps, each bound to the namespace of its env.
func mapPolicies() []mapPolicy {
	rules := func(resource string) *admissionregv1.MatchResources {
		return &admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{{RuleWithOperations: admissionregv1.RuleWithOperations{
			Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
			Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}}}}}}
	}
	mk := func(name, env string, spec admissionregv1.MutatingAdmissionPolicySpec, ref *admissionregv1.ParamRef) mapPolicy {
		if spec.MatchConstraints == nil {
			spec.MatchConstraints = rules("configmaps")
		}
		if spec.ReinvocationPolicy == "" {
			spec.ReinvocationPolicy = admissionregv1.NeverReinvocationPolicy
		}
		return mapPolicy{
			policy: &admissionregv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
			binding: &admissionregv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + env},
				Spec: admissionregv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: ref,
					MatchResources: &admissionregv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}},
		}
	}
	muts := func(ms ...admissionregv1.Mutation) admissionregv1.MutatingAdmissionPolicySpec {
		return admissionregv1.MutatingAdmissionPolicySpec{Mutations: ms}
	}
	const addApply = `Object{metadata: Object.metadata{labels: {"mutated": "apply"}}}`
	cmKind := &admissionregv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	cond := muts(applyConf(`Object{metadata: Object.metadata{labels: {"name": variables.name}}}`))
	cond.Variables = []admissionregv1.Variable{{Name: "name", Expression: "object.metadata.name"}}
	cond.MatchConditions = []admissionregv1.MatchCondition{{Name: "not-skip", Expression: "object.metadata.name != 'skip'"}}
	named := muts(applyConf(`Object{metadata: Object.metadata{labels: {"team": params.data.team}}}`))
	named.ParamKind = cmKind
	sel := muts(applyConf(`Object{metadata: Object.metadata{labels: {params.data.key: params.data.value}}}`))
	sel.ParamKind = cmKind
	ignore := muts(applyConf(`Object{metadata: Object.metadata{labels: {"x": object.data["missing"]}}}`), applyConf(`Object{metadata: Object.metadata{labels: {"mutated": "ignore-ok"}}}`))
	ignore.FailurePolicy = ptr.To(admissionregv1.Ignore)
	counter := muts(jsonPatchOf(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"count": string(
		has(object.metadata.annotations) && "count" in object.metadata.annotations ? int(object.metadata.annotations["count"]) + 1 : 1)}}]`))
	counter.ReinvocationPolicy = admissionregv1.IfNeededReinvocationPolicy
	badParam := muts(applyConf(addApply))
	badParam.ParamKind = &admissionregv1.ParamKind{APIVersion: "example.com/v1", Kind: "Nope"}
	// A policy's configuration error refuses every request its matchConstraints select,
	// whatever its bindings say.
	badParam.MatchConstraints = rules("configmaps")
	badParam.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "badparam"}}
	// Refused when written, by both: nothing is bound in fail-compile then.
	compileErr := muts(applyConf(`Object{metadata: Object.metadata{labels: {"x": nope}}}`), jsonPatchOf(`"not a list"`), applyConf(" "))
	compileErr.Variables = []admissionregv1.Variable{{Name: "v", Expression: "object.nope +"}}
	compileErr.MatchConditions = []admissionregv1.MatchCondition{{Name: "m", Expression: "params.x"}}
	pods := muts(applyConf(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "app", imagePullPolicy: "Always"}]}, metadata: Object.metadata{labels: {"pod": "mutated"}}}`))
	pods.MatchConstraints = rules("pods")
	return []mapPolicy{
		mk("apply-label", "apply", muts(applyConf(addApply), applyConf(`Object{data: {"added": "yes"}}`)), nil),
		mk("json-annotation", "json", muts(jsonPatchOf(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {"mutated": "json"}}, JSONPatch{op: "add", path: "/data/fromjson", value: "1"}]`)), nil),
		mk("cond-vars", "cond", cond, nil),
		mk("param-named", "params", named, &admissionregv1.ParamRef{Name: "team", Namespace: "params-store", ParameterNotFoundAction: ptr.To(admissionregv1.DenyAction)}),
		mk("param-selector", "sel", sel, &admissionregv1.ParamRef{Namespace: "sel-store", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}},
			ParameterNotFoundAction: ptr.To(admissionregv1.AllowAction)}),
		mk("runtime-error", "fail", muts(applyConf(`Object{metadata: Object.metadata{labels: {"x": object.data["missing"]}}}`)), nil),
		mk("compile-error", "fail-compile", compileErr, nil),
		mk("runtime-error-ignored", "ignore", ignore, nil),
		mk("a-counter", "reinv", counter, nil),
		mk("b-label", "reinv", muts(applyConf(addApply)), nil),
		mk("json-error", "jsonerr", muts(jsonPatchOf(`[JSONPatch{op: "add", path: "/spec/x/y", value: "x"}]`)), nil),
		mk("json-test", "jsontest", muts(jsonPatchOf(`[JSONPatch{op: "test", path: "/data/a", value: "nope"}, JSONPatch{op: "add", path: "/data/b", value: "2"}]`),
			applyConf(`Object{metadata: Object.metadata{labels: {"after-test": "yes"}}}`)), nil),
		mk("bad-param", "badparam", badParam, nil),
		mk("pod-pull", "pods", pods, nil),
	}
}
