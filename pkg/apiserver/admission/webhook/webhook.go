// Package webhook enforces MutatingWebhookConfigurations and ValidatingWebhookConfigurations
// as kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins do:
// it sends AdmissionReview v1 requests over TLS to the webhooks whose rules and selectors
// match a request, applies mutating webhooks' JSON patches, and refuses what a webhook
// denies. The configurations come from a watch, never from a storage read per request.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/admission/matchconditions"
	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/apiserver/webhookclient"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Config configures the webhook plugins.
type Config struct {
	// Informers gives the shared informers of the MutatingWebhookConfigurations,
	// ValidatingWebhookConfigurations and namespaces (for namespaceSelector).
	Informers *informer.Factory
	Resolve   webhookclient.ServiceResolver
	Logger    *slog.Logger
	// Authorizer answers matchConditions' authorizer checks (nil: such checks fail).
	Authorizer authorizer.UnconditionalAuthorizer
	// Equivalents are the resources serving the same objects as a resource (other versions,
	// other groups), with their kinds, for matchPolicy Equivalent; nil: none.
	Equivalents func(schema.GroupVersionResource) []Equivalent
	// Convert returns obj as kind to (a new object; obj is not changed), for a webhook
	// matched through an equivalent resource; nil or an error: the object is sent as it is.
	Convert func(ctx context.Context, obj runtime.Object, to schema.GroupVersionKind) (runtime.Object, error)
}

// Equivalent is a resource and its kind.
type Equivalent struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// hook is one webhook of a configuration, mutating or validating, in a common form.
type hook struct {
	config, name      string
	index             int // in its configuration
	clientConfig      admissionregv1.WebhookClientConfig
	rules             []admissionregv1.RuleWithOperations
	failurePolicy     admissionregv1.FailurePolicyType
	sideEffects       admissionregv1.SideEffectClass
	timeout           time.Duration
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	reviewVersions    []string
	reinvokeIfNeeded  bool
	conditions        []matchconditions.Condition
	equivalent        bool // matchPolicy Equivalent (the default)
}

// Dispatcher is the shared state of both webhook plugins.
type Dispatcher struct {
	cfg        Config
	mutating   *informer.Informer[*admissionregv1.MutatingWebhookConfiguration]
	validating *informer.Informer[*admissionregv1.ValidatingWebhookConfiguration]
	namespaces *informer.Informer[*corev1.Namespace]

	mutatingHooks   atomic.Pointer[[]*hook]
	validatingHooks atomic.Pointer[[]*hook]

	clients *webhookclient.Clients
}

// New returns the dispatcher; Start waits for its informers.
func New(cfg Config) *Dispatcher {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Dispatcher{cfg: cfg, clients: webhookclient.New(cfg.Resolve)}
	empty := []*hook{}
	d.mutatingHooks.Store(&empty)
	d.validatingHooks.Store(&empty)
	const group = "admissionregistration.k8s.io"
	d.mutating = informer.For[*admissionregv1.MutatingWebhookConfiguration](cfg.Informers, schema.GroupResource{Group: group, Resource: "mutatingwebhookconfigurations"})
	d.validating = informer.For[*admissionregv1.ValidatingWebhookConfiguration](cfg.Informers, schema.GroupResource{Group: group, Resource: "validatingwebhookconfigurations"})
	d.namespaces = informer.For[*corev1.Namespace](cfg.Informers, schema.GroupResource{Resource: "namespaces"})
	d.mutating.AddHandler(informer.OnChange[*admissionregv1.MutatingWebhookConfiguration](d.rebuildMutating))
	d.validating.AddHandler(informer.OnChange[*admissionregv1.ValidatingWebhookConfiguration](d.rebuildValidating))
	return d
}

// Start returns once the informers of the configurations and namespaces hold a first list
// (or ctx ends).
func (d *Dispatcher) Start(ctx context.Context) {
	_ = d.mutating.WaitForSync(ctx)
	_ = d.validating.WaitForSync(ctx)
	_ = d.namespaces.WaitForSync(ctx)
}

// Synced reports whether the configurations of name are in the caches (tests).
func (d *Dispatcher) Synced(mutating bool, configName string) bool {
	if mutating {
		_, ok := d.mutating.Get("", configName)
		return ok
	}
	_, ok := d.validating.Get("", configName)
	return ok
}

func (d *Dispatcher) rebuildMutating() {
	cfgs := d.mutating.List("")
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].Name < cfgs[j].Name })
	hooks := []*hook{}
	for _, c := range cfgs {
		for i, w := range c.Webhooks {
			h := &hook{config: c.Name, name: w.Name, index: i, clientConfig: w.ClientConfig, rules: w.Rules,
				namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector, reviewVersions: w.AdmissionReviewVersions,
				reinvokeIfNeeded: w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregv1.IfNeededReinvocationPolicy}
			h.conditions = matchconditions.Compile(w.MatchConditions)
			h.equivalent = w.MatchPolicy == nil || *w.MatchPolicy == admissionregv1.Equivalent
			h.setCommon(w.FailurePolicy, w.SideEffects, w.TimeoutSeconds)
			hooks = append(hooks, h)
		}
	}
	d.mutatingHooks.Store(&hooks)
}

func (d *Dispatcher) rebuildValidating() {
	cfgs := d.validating.List("")
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].Name < cfgs[j].Name })
	hooks := []*hook{}
	for _, c := range cfgs {
		for i, w := range c.Webhooks {
			h := &hook{config: c.Name, name: w.Name, index: i, clientConfig: w.ClientConfig, rules: w.Rules,
				namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector, reviewVersions: w.AdmissionReviewVersions}
			h.conditions = matchconditions.Compile(w.MatchConditions)
			h.equivalent = w.MatchPolicy == nil || *w.MatchPolicy == admissionregv1.Equivalent
			h.setCommon(w.FailurePolicy, w.SideEffects, w.TimeoutSeconds)
			hooks = append(hooks, h)
		}
	}
	d.validatingHooks.Store(&hooks)
}

// setCommon fills upstream's defaults: failurePolicy Fail, timeout 10s.
func (h *hook) setCommon(fp *admissionregv1.FailurePolicyType, se *admissionregv1.SideEffectClass, timeout *int32) {
	h.failurePolicy = admissionregv1.Fail
	if fp != nil {
		h.failurePolicy = *fp
	}
	h.sideEffects = admissionregv1.SideEffectClassUnknown
	if se != nil {
		h.sideEffects = *se
	}
	h.timeout = 10 * time.Second
	if timeout != nil && *timeout > 0 {
		h.timeout = time.Duration(*timeout) * time.Second
	}
}

// Mutating is the MutatingAdmissionWebhook plugin.
func (d *Dispatcher) Mutating() admission.Mutator { return mutatingPlugin{d} }

// Validating is the ValidatingAdmissionWebhook plugin.
func (d *Dispatcher) Validating() admission.Validator { return validatingPlugin{d} }

var allOps = admission.Operations{admission.Create, admission.Update, admission.Delete, admission.Connect}

type mutatingPlugin struct{ d *Dispatcher }

func (mutatingPlugin) Handles(op admission.Operation) bool { return allOps.Handles(op) }

type validatingPlugin struct{ d *Dispatcher }

func (validatingPlugin) Handles(op admission.Operation) bool { return allOps.Handles(op) }

// matches decides whether h is called for a: rules (or, with matchPolicy Equivalent, a
// rule for an equivalent resource), then the namespace and object selectors, then the
// matchConditions. It returns what the webhook is sent: a itself, or a converted to the
// equivalent resource's version; nil when it is not called. An error (a selector that does
// not parse, a namespace that cannot be read) is a call failure, subject to failurePolicy.
func (d *Dispatcher) matches(ctx context.Context, h *hook, a *admission.Attributes) (*admission.Attributes, error) {
	inv := d.ruleInvocation(ctx, h, a)
	if inv == nil {
		return nil, nil
	}
	if ok, err := d.namespaceSelectorMatches(h.namespaceSelector, a); !ok || err != nil {
		return nil, err
	}
	if ok, err := ObjectSelectorMatches(h.objectSelector, a); !ok || err != nil {
		return nil, err
	}
	if ok, err := d.conditionsMatch(ctx, h, inv); !ok || err != nil {
		return nil, err
	}
	return inv, nil
}

// ruleInvocation is upstream's rule matching: a rule for the request's resource, else (with
// matchPolicy Equivalent) the first rule, in order, covering an equivalent resource; the
// object is then converted to that resource's version when the server can.
func (d *Dispatcher) ruleInvocation(ctx context.Context, h *hook, a *admission.Attributes) *admission.Attributes {
	for _, r := range h.rules {
		if RuleMatches(r, a) {
			return a
		}
	}
	if !h.equivalent || d.cfg.Equivalents == nil {
		return nil
	}
	eqs := d.cfg.Equivalents(a.Resource)
	if len(eqs) == 0 {
		return nil
	}
	alt := *a
	for _, r := range h.rules {
		for _, eq := range eqs {
			if eq.Resource == a.Resource {
				continue
			}
			alt.Resource = eq.Resource
			if RuleMatches(r, &alt) {
				return d.convertInvocation(ctx, a, eq)
			}
		}
	}
	return nil
}

// convertInvocation is a as the equivalent resource eq: its objects converted to eq's kind.
// When they cannot be, the webhook gets the request as it is (kind and resource as served).
func (d *Dispatcher) convertInvocation(ctx context.Context, a *admission.Attributes, eq Equivalent) *admission.Attributes {
	inv := *a
	inv.Resource, inv.Kind = eq.Resource, eq.Kind
	if a.Kind == eq.Kind {
		return &inv
	}
	if d.cfg.Convert == nil {
		return a
	}
	for _, o := range []*runtime.Object{&inv.Object, &inv.OldObject} {
		if *o == nil {
			continue
		}
		c, err := d.cfg.Convert(ctx, *o, eq.Kind)
		if err != nil {
			d.cfg.Logger.Debug("admission webhook: cannot convert to the equivalent resource's version; sending the request as it is", "from", a.Kind, "to", eq.Kind, "err", err)
			return a
		}
		*o = c
	}
	return &inv
}

// conditionError is a matchConditions evaluation error under failurePolicy Fail: upstream
// refuses the request with it (403), not as a failed call.
type conditionError struct{ err error }

func (e *conditionError) Error() string { return e.err.Error() }

// conditionsMatch evaluates h's matchConditions as upstream's matcher: any false condition
// skips the webhook; otherwise evaluation errors skip it with failurePolicy Ignore and
// refuse the request (403) with Fail.
func (d *Dispatcher) conditionsMatch(ctx context.Context, h *hook, a *admission.Attributes) (bool, error) {
	if len(h.conditions) == 0 {
		return true, nil
	}
	in, err := d.conditionInput(a)
	if err == nil {
		var ok bool
		if ok, err = matchconditions.Match(ctx, h.conditions, in); err == nil || ok {
			return ok, nil
		}
	}
	if h.failurePolicy == admissionregv1.Ignore {
		d.cfg.Logger.Warn("admission webhook's matchConditions failed, webhook skipped (failurePolicy Ignore)", "webhook", h.name, "err", err)
		return false, nil
	}
	return false, &conditionError{apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)}
}

// conditionInput is what matchConditions see of a.
func (d *Dispatcher) conditionInput(a *admission.Attributes) (matchconditions.Input, error) {
	var in matchconditions.Input
	var err error
	if in.Object, err = matchconditions.ToMap(a.Object); err != nil {
		return in, err
	}
	if in.OldObject, err = matchconditions.ToMap(a.OldObject); err != nil {
		return in, err
	}
	if a.Namespace != "" {
		if ns, ok := d.namespaces.Get("", a.Namespace); ok {
			ns = ns.DeepCopy()
			ns.ManagedFields = nil
			if in.Namespace, err = matchconditions.ToMap(ns); err != nil {
				return in, err
			}
		}
	}
	req, _, err := review(&admission.Attributes{Operation: a.Operation, Kind: a.Kind, Resource: a.Resource, Subresource: a.Subresource,
		Namespace: a.Namespace, Name: a.Name, Options: a.Options, DryRun: a.DryRun, User: a.User}, nil)
	if err != nil {
		return in, err
	}
	req.UID = ""
	if in.Request, err = runtime.DefaultUnstructuredConverter.ToUnstructured(req); err != nil {
		return in, err
	}
	if d.cfg.Authorizer != nil {
		in.Authorizer = d.cfg.Authorizer
		u := &user.DefaultInfo{}
		if a.User != nil {
			u = &user.DefaultInfo{Name: a.User.Name, UID: a.User.UID, Groups: a.User.Groups, Extra: a.User.Extra}
		}
		in.User = u
		in.Resource = resourceOf{a}
	}
	return in, nil
}

// resourceOf is a request's resource for authorizer.requestResource.
type resourceOf struct{ a *admission.Attributes }

func (r resourceOf) GetName() string                          { return r.a.Name }
func (r resourceOf) GetNamespace() string                     { return r.a.Namespace }
func (r resourceOf) GetResource() schema.GroupVersionResource { return r.a.Resource }
func (r resourceOf) GetSubresource() string                   { return r.a.Subresource }

func (d *Dispatcher) namespaceSelectorMatches(sel *metav1.LabelSelector, a *admission.Attributes) (bool, error) {
	return NamespaceSelectorMatches(sel, a, func(name string) (*corev1.Namespace, bool) { return d.namespaces.Get("", name) })
}

// callError is a webhook that could not be called or answered nonsense: failurePolicy
// decides whether that refuses the request.
type callError struct {
	name string
	err  error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.name, e.err)
}

// Admit calls the matching mutating webhooks in order (configurations by name), applies
// their patches, and calls again, once, a webhook with reinvocationPolicy IfNeeded that a
// later webhook's change made stale.
func (p mutatingPlugin) Admit(ctx context.Context, a *admission.Attributes) error {
	hooks := *p.d.mutatingHooks.Load()
	if len(hooks) == 0 {
		return nil
	}
	type called struct {
		h     *hook
		saw   []byte // the object as the webhook saw it
		index int
	}
	var reinvoke []called
	for i, h := range hooks {
		saw, err := p.d.callMutating(ctx, h, a, 0, i)
		if err != nil {
			return err
		}
		if saw != nil && h.reinvokeIfNeeded {
			reinvoke = append(reinvoke, called{h, saw, i})
		}
	}
	if len(reinvoke) == 0 || a.Object == nil {
		return nil
	}
	now, _ := json.Marshal(a.Object)
	for _, c := range reinvoke {
		if bytes.Equal(c.saw, now) {
			continue
		}
		if _, err := p.d.callMutating(ctx, c.h, a, 1, c.index); err != nil {
			return err
		}
		now, _ = json.Marshal(a.Object)
	}
	return nil
}

// callMutating calls h if it matches, applies its patch, and returns the object as sent
// (nil when it was not called).
func (d *Dispatcher) callMutating(ctx context.Context, h *hook, a *admission.Attributes, round, index int) ([]byte, error) {
	inv, err := d.matches(ctx, h, a)
	if err == nil && inv == nil {
		return nil, nil
	}
	var resp *admissionv1.AdmissionResponse
	var sent []byte
	if err == nil {
		sent, resp, err = d.call(ctx, h, inv, a)
	}
	if err != nil {
		return nil, d.failed(ctx, h, err, "mutating", round, index)
	}
	if !resp.Allowed {
		return sent, toStatusErr(h.name, resp.Result)
	}
	d.annotate(ctx, h, resp)
	mutated := false
	if len(resp.Patch) > 0 {
		if a.Object == nil {
			return sent, d.failed(ctx, h, errors.New("a patch was returned for a request without an object"), "mutating", round, index)
		}
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			return sent, d.failed(ctx, h, fmt.Errorf("unsupported patch type %v", resp.PatchType), "mutating", round, index)
		}
		if err := applyPatch(inv.Object, sent, resp.Patch); err != nil {
			return sent, d.failed(ctx, h, err, "mutating", round, index)
		}
		if inv != a {
			// Back to the version the request is served in.
			if err := d.convertBack(ctx, inv.Object, a.Object, a.Kind); err != nil {
				return sent, d.failed(ctx, h, err, "mutating", round, index)
			}
		}
		mutated = true
	}
	key := fmt.Sprintf("mutation.webhook.admission.k8s.io/round_%d_index_%d", round, index)
	// Upstream's MutationAuditAnnotation, in its field order.
	v, _ := json.Marshal(struct {
		Configuration string `json:"configuration"`
		Webhook       string `json:"webhook"`
		Mutated       bool   `json:"mutated"`
	}{h.config, h.name, mutated})
	request.AddAnnotation(ctx, key, string(v))
	return sent, nil
}

// convertBack converts the patched equivalent object to kind and stores it in obj.
func (d *Dispatcher) convertBack(ctx context.Context, patched, obj runtime.Object, kind schema.GroupVersionKind) error {
	if patched == obj {
		return nil
	}
	back, err := d.cfg.Convert(ctx, patched, kind)
	if err != nil {
		return fmt.Errorf("converting the patched object back to %s: %w", kind, err)
	}
	if reflect.TypeOf(back) != reflect.TypeOf(obj) {
		return fmt.Errorf("converting the patched object back to %s: got %T", kind, back)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(back).Elem())
	return nil
}

// applyPatch applies a JSON patch to obj (whose JSON is objJSON) in place.
func applyPatch(obj runtime.Object, objJSON, patch []byte) error {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return fmt.Errorf("the patch is not a JSON patch: %w", err)
	}
	patched, err := p.Apply(objJSON)
	if err != nil {
		return fmt.Errorf("the patch could not be applied: %w", err)
	}
	fresh := reflect.New(reflect.TypeOf(obj).Elem())
	dec := json.NewDecoder(bytes.NewReader(patched))
	if err := dec.Decode(fresh.Interface()); err != nil {
		return fmt.Errorf("the patched object does not decode: %w", err)
	}
	reflect.ValueOf(obj).Elem().Set(fresh.Elem())
	return nil
}

// Validate calls the matching validating webhooks in parallel; any denial refuses.
func (p validatingPlugin) Validate(ctx context.Context, a *admission.Attributes) error {
	hooks := *p.d.validatingHooks.Load()
	if len(hooks) == 0 {
		return nil
	}
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		inv, err := p.d.matches(ctx, h, a)
		if err == nil && inv == nil {
			continue
		}
		if err != nil {
			errs[i] = p.d.failed(ctx, h, err, "validating", 0, i)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, resp, err := p.d.call(ctx, h, inv, a)
			switch {
			case err != nil:
				errs[i] = p.d.failed(ctx, h, err, "validating", 0, i)
			case !resp.Allowed:
				p.d.annotate(ctx, h, resp)
				errs[i] = toStatusErr(h.name, resp.Result)
			default:
				p.d.annotate(ctx, h, resp)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// failed handles a webhook that could not be called: a 400 for a dry run it cannot take
// (whatever its failurePolicy, as upstream), nothing with failurePolicy Ignore (noted in the
// audit annotations), and 500 "failed calling webhook" with Fail.
func (d *Dispatcher) failed(ctx context.Context, h *hook, err error, kind string, round, index int) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Reason == metav1.StatusReasonBadRequest {
		return err
	}
	if ce, ok := err.(*conditionError); ok {
		return ce.err
	}
	ce := &callError{name: h.name, err: err}
	if h.failurePolicy == admissionregv1.Ignore {
		d.cfg.Logger.Warn("admission webhook failed, ignored (failurePolicy Ignore)", "webhook", h.name, "err", err)
		request.AddAnnotation(ctx, fmt.Sprintf("failed-open.%s.webhook.admission.k8s.io/round_%d_index_%d", kind, round, index), h.name)
		return nil
	}
	return apierrors.NewInternalError(ce)
}

// annotate records a webhook's audit annotations (prefixed with its name) and sends its
// warnings to the client.
func (d *Dispatcher) annotate(ctx context.Context, h *hook, resp *admissionv1.AdmissionResponse) {
	for k, v := range resp.AuditAnnotations {
		request.AddAnnotation(ctx, h.name+"/"+k, v)
	}
	for _, w := range resp.Warnings {
		request.AddWarning(ctx, w)
	}
}

// toStatusErr is upstream's webhookerrors.ToStatusErr: the webhook's Status with the
// message prefixed by who denied, and a code of at least 400.
func toStatusErr(name string, result *metav1.Status) error {
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", name)
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	switch {
	case st.Message != "":
		st.Message = deniedBy + ": " + st.Message
	case st.Reason != "":
		st.Message = deniedBy + ": " + string(st.Reason)
	default:
		st.Message = deniedBy + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// call sends one AdmissionReview and returns the object as sent and the response.
// a is what the webhook is sent (the request, or its equivalent), orig the request.
func (d *Dispatcher) call(ctx context.Context, h *hook, a, orig *admission.Attributes) ([]byte, *admissionv1.AdmissionResponse, error) {
	if a.DryRun && h.sideEffects != admissionregv1.SideEffectClassNone && h.sideEffects != admissionregv1.SideEffectClassNoneOnDryRun {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.name))
	}
	v1OK := false
	for _, v := range h.reviewVersions {
		v1OK = v1OK || v == "v1"
	}
	if !v1OK {
		return nil, nil, fmt.Errorf("webhook does not accept known AdmissionReview versions %v (hacp sends v1)", h.reviewVersions)
	}
	req, objJSON, err := review(a, orig)
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	data, err := d.clients.Post(cctx, clientConfig(h.clientConfig), body)
	if err != nil {
		return nil, nil, err
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, nil, fmt.Errorf("received invalid webhook response: %w", err)
	}
	if out.Response == nil {
		return nil, nil, errors.New("webhook response was absent")
	}
	if out.Response.UID != req.UID {
		return nil, nil, fmt.Errorf("expected response.uid=%q, got %q", req.UID, out.Response.UID)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
		return nil, nil, fmt.Errorf("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", out.APIVersion, out.Kind)
	}
	return objJSON, out.Response, nil
}

// review builds the AdmissionRequest for a, the request orig (nil: a) as seen in the
// version of a's resource; objJSON is the object as sent.
func review(a, orig *admission.Attributes) (*admissionv1.AdmissionRequest, []byte, error) {
	if orig == nil {
		orig = a
	}
	gvk := metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind}
	gvr := metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource}
	reqGVK := metav1.GroupVersionKind{Group: orig.Kind.Group, Version: orig.Kind.Version, Kind: orig.Kind.Kind}
	reqGVR := metav1.GroupVersionResource{Group: orig.Resource.Group, Version: orig.Resource.Version, Resource: orig.Resource.Resource}
	dry := a.DryRun
	req := &admissionv1.AdmissionRequest{
		UID: types.UID(uuid.NewUUID()), Kind: gvk, Resource: gvr, SubResource: a.Subresource,
		RequestKind: &reqGVK, RequestResource: &reqGVR, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: admissionv1.Operation(a.Operation), DryRun: &dry,
	}
	if u := a.User; u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	var objJSON []byte
	var err error
	if a.Object != nil {
		if objJSON, err = json.Marshal(a.Object); err != nil {
			return nil, nil, err
		}
		req.Object.Raw = objJSON
	}
	if a.OldObject != nil {
		if req.OldObject.Raw, err = json.Marshal(a.OldObject); err != nil {
			return nil, nil, err
		}
	}
	if a.Options != nil {
		opts := a.Options.DeepCopyObject()
		kind := map[admission.Operation]string{admission.Create: "CreateOptions", admission.Update: "UpdateOptions", admission.Delete: "DeleteOptions"}[a.Operation]
		if kind != "" {
			opts.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(kind))
			if req.Options.Raw, err = json.Marshal(opts); err != nil {
				return nil, nil, err
			}
		}
	}
	return req, objJSON, nil
}

// clientConfig is an admission webhook's clientConfig in webhookclient's terms.
func clientConfig(cc admissionregv1.WebhookClientConfig) webhookclient.Config {
	out := webhookclient.Config{URL: cc.URL, CABundle: cc.CABundle}
	if s := cc.Service; s != nil {
		out.Service = &webhookclient.Service{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	return out
}
