package policy

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// invocation is one policy, binding and param that a request selects.
type invocation struct {
	h     *mutatingHook
	b     *admissionregv1.MutatingAdmissionPolicyBinding
	m     match
	param runtime.Object
}

// invocationKey identifies an invocation across the two passes (upstream's key).
type invocationKey struct {
	policy, binding string
	param           types.NamespacedName
}

// policyError is upstream's generic.PolicyError: a configuration or evaluation error that
// refuses the request unless the policy's failurePolicy is Ignore.
type policyError struct {
	policy  *admissionregv1.MutatingAdmissionPolicy
	binding string // "" for an error of the policy itself
	err     error
	reason  metav1.StatusReason // "" keeps Forbidden
}

func (e policyError) message() string {
	if e.binding != "" {
		return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy.Name, e.binding, e.err.Error())
	}
	return fmt.Sprintf("policy %q denied request: %s", e.policy.Name, e.err.Error())
}

// mutation holds one request's state.
type mutation struct {
	p        *Mutating
	a        *admission.Attributes
	upstream k8sadmission.Attributes // a in k8s.io/apiserver's terms
	errs     []policyError
}

// Admit mutates a's object with every selected policy invocation, in order. Then, as
// kube-apiserver's reinvocation pass after the mutating chain, when a policy changed the
// object, the invocations of policies with reinvocationPolicy IfNeeded run once more.
// (Upstream's pass also follows mutating webhooks' changes; hacp's webhook plugin
// reinvokes only its own webhooks, so here only the policies' changes count.)
func (p *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	hooks := *p.hooks.Load()
	if len(hooks) == 0 {
		return nil
	}
	r := &mutation{p: p, a: a, upstream: upstreamAttributes(a)}
	again, err := r.pass(ctx, hooks, nil)
	if err != nil || len(again) == 0 {
		return err
	}
	_, err = r.pass(ctx, hooks, again)
	return err
}

// pass is upstream's Dispatch: the invocations the request selects (configuration errors
// aside), run in order; only those in only when it is not nil. It returns the invocations
// to run again.
func (r *mutation) pass(ctx context.Context, hooks []*mutatingHook, only map[invocationKey]bool) (map[invocationKey]bool, error) {
	r.errs = nil
	invs := r.collect(ctx, hooks)
	var again map[invocationKey]bool
	if len(invs) > 0 {
		var err error
		if again, err = r.invoke(ctx, invs, only); err != nil {
			return nil, err
		}
	}
	return again, r.denial()
}

// collect is every policy whose matchConstraints, binding whose matchResources and param
// whose paramRef select the request.
func (r *mutation) collect(ctx context.Context, hooks []*mutatingHook) []invocation {
	var out []invocation
	for _, h := range hooks {
		ok, m, err := r.p.definitionMatches(ctx, h.policy.Spec.MatchConstraints, r.a)
		if err == nil && ok && h.policy.Spec.ParamKind != nil {
			_, _, err = r.p.paramResource(h.policy.Spec.ParamKind)
		}
		if err != nil {
			r.configError(h.policy, nil, err)
			continue
		}
		if !ok {
			continue
		}
		for _, b := range h.bindings {
			ok, err := r.p.bindingMatches(ctx, b.Spec.MatchResources, r.a)
			if err != nil {
				r.configError(h.policy, b, err)
				continue
			}
			if !ok {
				continue
			}
			if m.kind != r.a.Kind && r.p.cfg.Convert == nil {
				r.configError(h.policy, nil, fmt.Errorf("no conversion to %v", m.kind))
				continue
			}
			params, err := r.p.collectParams(ctx, h.policy.Spec.ParamKind, b.Spec.ParamRef, r.a.Namespace)
			if err != nil {
				r.configError(h.policy, b, err)
				continue
			}
			for _, param := range params {
				out = append(out, invocation{h: h, b: b, m: m, param: param})
			}
		}
	}
	return out
}

// configError is upstream's addConfigError of the policy dispatcher.
func (r *mutation) configError(pol *admissionregv1.MutatingAdmissionPolicy, b *admissionregv1.MutatingAdmissionPolicyBinding, err error) {
	if b == nil {
		r.errs = append(r.errs, policyError{policy: pol, err: fmt.Errorf("failed to configure policy: %w", err)})
		return
	}
	r.errs = append(r.errs, policyError{policy: pol, binding: b.Name, err: fmt.Errorf("failed to configure binding: %w", err)})
}

// invoke is upstream's dispatchInvocations: for each invocation whose matchConditions
// hold, its mutations in order. A StatusError stops the request; other errors are
// collected for failurePolicy. It returns the IfNeeded invocations to run again: all
// that ran, once any mutation was applied.
func (r *mutation) invoke(ctx context.Context, invs []invocation, only map[invocationKey]bool) (map[invocationKey]bool, error) {
	ns, err := r.p.namespaceObject(ctx, r.a)
	if err != nil {
		return nil, err
	}
	patched := false
	var ifNeeded []invocationKey
	for _, inv := range invs {
		pol := inv.h.policy
		if len(inv.h.eval.patchers) != len(pol.Spec.Mutations) {
			return nil, apierrors.NewInternalError(fmt.Errorf("expected %v compiled evaluators for policy %v, got %v",
				len(pol.Spec.Mutations), pol.Name, len(inv.h.eval.patchers)))
		}
		va, err := r.versioned(ctx, inv.m.kind)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if mt := inv.h.eval.matcher; mt != nil {
			res := mt.Match(ctx, va, inv.param, r.p.cfg.Authorizer)
			if res.Error != nil {
				r.errs = append(r.errs, policyError{policy: pol, binding: inv.b.Name, err: res.Error, reason: metav1.StatusReasonInvalid})
				continue
			}
			if !res.Matches {
				continue
			}
		}
		// The invocation's mutations see the variables in this context, as upstream's.
		ctx := inv.h.eval.compiler.CreateContext(ctx)
		key, err := keyOf(inv)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if only != nil && !only[key] {
			continue
		}
		ran, err := r.mutate(ctx, inv, va, ns)
		if err != nil {
			return nil, err
		}
		patched = patched || ran
		if pol.Spec.ReinvocationPolicy == admissionregv1.IfNeededReinvocationPolicy {
			ifNeeded = append(ifNeeded, key)
		}
	}
	if !patched || len(ifNeeded) == 0 {
		return nil, nil
	}
	again := map[invocationKey]bool{}
	for _, k := range ifNeeded {
		again[k] = true
	}
	return again, nil
}

// mutate runs one invocation's mutations on va and writes the result into the request's
// object; ran reports whether a mutation was applied.
func (r *mutation) mutate(ctx context.Context, inv invocation, va *k8sadmission.VersionedAttributes, ns *corev1.Namespace) (ran bool, err error) {
	for _, pt := range inv.h.eval.patchers {
		if va.VersionedObject.Object() == nil {
			continue // nothing to patch
		}
		obj, err := r.patchOne(ctx, pt, inv, va, ns)
		if err != nil {
			var se *apierrors.StatusError
			if errors.As(err, &se) {
				return ran, se
			}
			r.errs = append(r.errs, policyError{policy: inv.h.policy, binding: inv.b.Name, err: err, reason: metav1.StatusReasonInvalid})
			continue
		}
		va.UpdateObject(obj)
		ran = true
	}
	if !ran {
		return false, nil
	}
	return true, r.writeBack(ctx, va)
}

// patchOne is upstream's dispatchOne: the patch, with the kind's schema, back as the
// kind's typed object for a built-in kind.
func (r *mutation) patchOne(ctx context.Context, pt patch.Patcher, inv invocation, va *k8sadmission.VersionedAttributes, ns *corev1.Namespace) (runtime.Object, error) {
	conv, err := r.typeConverter(va.VersionedKind)
	if err != nil {
		return nil, err
	}
	req := patch.Request{MatchedResource: inv.m.resource, VersionedAttributes: va, ObjectInterfaces: objectInterfaces{r.p.scheme()},
		OptionalVariables: celplugin.OptionalVariableBindings{VersionedParams: inv.param, Authorizer: r.p.cfg.Authorizer},
		Namespace:         ns, TypeConverter: conv}
	obj, err := pt.Patch(ctx, req, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if _, custom := va.VersionedObject.Object().(*unstructured.Unstructured); custom || !ok {
		return obj, nil
	}
	typed, err := r.p.scheme().New(va.VersionedKind)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, err
	}
	typed.GetObjectKind().SetGroupVersionKind(va.VersionedKind)
	return typed, nil
}

// writeBack puts va's object into the request's object, converted back to the request's
// kind, in place.
func (r *mutation) writeBack(ctx context.Context, va *k8sadmission.VersionedAttributes) error {
	obj := va.VersionedObject.Object()
	if va.VersionedKind != r.a.Kind {
		var err error
		if obj, err = r.p.cfg.Convert(ctx, obj, r.a.Kind); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
		}
	}
	dst, src := reflect.ValueOf(r.a.Object), reflect.ValueOf(obj)
	if dst.Type() != src.Type() || dst.Kind() != reflect.Pointer {
		return apierrors.NewInternalError(fmt.Errorf("failed to convert object: %T is not %T", obj, r.a.Object))
	}
	dst.Elem().Set(src.Elem())
	return nil
}

// versioned are the request's objects as kind, made afresh from the (maybe mutated)
// request's object.
func (r *mutation) versioned(ctx context.Context, kind schema.GroupVersionKind) (*k8sadmission.VersionedAttributes, error) {
	obj, old := r.a.Object, r.a.OldObject
	if obj != nil && obj.GetObjectKind().GroupVersionKind().Empty() {
		obj.GetObjectKind().SetGroupVersionKind(r.a.Kind) // the patchers need it
	}
	if kind != r.a.Kind {
		var err error
		if obj, err = convert(ctx, r.p.cfg.Convert, obj, kind); err != nil {
			return nil, err
		}
		if old, err = convert(ctx, r.p.cfg.Convert, old, kind); err != nil {
			return nil, err
		}
	}
	return &k8sadmission.VersionedAttributes{Attributes: r.upstream, VersionedKind: kind,
		VersionedObject: k8sadmission.NewLazyObject(obj), VersionedOldObject: k8sadmission.NewLazyObject(old)}, nil
}

// typeConverter is the kind's schema; none is upstream's 503.
func (r *mutation) typeConverter(kind schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	if r.p.cfg.TypeConverter != nil {
		if tc, err := r.p.cfg.TypeConverter(kind); err == nil && tc != nil {
			return tc, nil
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", kind))
}

// denial is upstream's refusal: 403 Forbidden for the object, with the first error's
// message (and its reason, Invalid for an evaluation error) and every message as a cause;
// errors of policies with failurePolicy Ignore do not count.
func (r *mutation) denial() error {
	var errs []policyError
	for _, e := range r.errs {
		if fp := e.policy.Spec.FailurePolicy; fp != nil && *fp == admissionregv1.Ignore {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) == 0 {
		return nil
	}
	cause := errors.New("admission request denied by policy")
	forbidden := admission.NewForbidden(r.a, cause)
	if r.a.Name != "" {
		forbidden = apierrors.NewForbidden(r.a.Resource.GroupResource(), r.a.Name, cause)
	}
	var se *apierrors.StatusError
	if !errors.As(forbidden, &se) {
		return apierrors.NewInternalError(errors.New("failed to create status error"))
	}
	se.ErrStatus.Message = errs[0].message()
	if errs[0].reason != "" {
		se.ErrStatus.Reason = errs[0].reason
	}
	for _, e := range errs {
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{Message: e.message()})
	}
	return se
}

// keyOf is upstream's keyFor: policy, binding and param by name.
func keyOf(inv invocation) (invocationKey, error) {
	k := invocationKey{policy: inv.h.policy.Name, binding: inv.b.Name}
	if inv.param != nil {
		m, err := meta.Accessor(inv.param)
		if err != nil {
			return invocationKey{}, err
		}
		k.param = types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	}
	return k, nil
}

func (p *Mutating) scheme() *runtime.Scheme {
	if p.cfg.Scheme != nil {
		return p.cfg.Scheme
	}
	return runtime.NewScheme()
}

// objectInterfaces are the scheme in k8s.io/apiserver's terms, for the JSONPatch patcher
// (which creates and decodes the patched object).
type objectInterfaces struct{ s *runtime.Scheme }

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return o.s }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return o.s }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o.s }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return o.s }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return nil
}
