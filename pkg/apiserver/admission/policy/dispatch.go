package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
)

// denied is a denial with the policy and binding ("" for a policy-level error) it came
// from.
type denied struct {
	decision
	policy, binding string
}

// validationFailure is one entry of the validation.policy.admission.k8s.io/validation_failure
// audit annotation (bindings with validationActions Audit).
type validationFailure struct {
	Message           string                            `json:"message"`
	Policy            string                            `json:"policy"`
	Binding           string                            `json:"binding"`
	ExpressionIndex   int                               `json:"expressionIndex"`
	ValidationActions []admissionregv1.ValidationAction `json:"validationActions"`
}

const (
	maxAuditAnnotationValueLength = 10 * 1024
	maxValidationFailures         = 50
	validationFailureKey          = "validation.policy.admission.k8s.io/validation_failure"
)

// dispatch holds one request's state across policies.
type dispatch struct {
	p        *Plugin
	a        *admission.Attributes
	upstream k8sadmission.Attributes // a in k8s.io/apiserver's terms, made on first use
	denied   []denied
	failures []validationFailure
	// versioned are the request's objects per kind a policy matched them as.
	versioned map[schema.GroupVersionKind]*k8sadmission.VersionedAttributes
}

// Validate is upstream's dispatcher: every bound policy whose matchConstraints select the
// request, every binding of it whose matchResources do, every param the binding selects.
// The first denial (policies by name, bindings by name) refuses the request.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	hooks := *p.hooks.Load()
	if len(hooks) == 0 {
		return nil
	}
	d := &dispatch{p: p, a: a, versioned: map[schema.GroupVersionKind]*k8sadmission.VersionedAttributes{}}
	for _, h := range hooks {
		if err := d.policy(ctx, h); err != nil {
			return err
		}
	}
	d.publishFailures(ctx)
	if len(d.denied) == 0 {
		return nil
	}
	return d.denial()
}

// policy runs one policy's bindings.
func (d *dispatch) policy(ctx context.Context, h *hook) error {
	ok, m, err := d.p.definitionMatches(ctx, h.policy.Spec.MatchConstraints, d.a)
	if err != nil {
		d.configError(err, h.policy, nil)
		return nil
	}
	if !ok {
		return nil
	}
	if pk := h.policy.Spec.ParamKind; pk != nil {
		if _, _, err := d.p.paramResource(pk); err != nil {
			d.configError(err, h.policy, nil)
			return nil
		}
	}
	audits := map[string][]string{}
	for _, b := range h.bindings {
		if err := d.binding(ctx, h, b, m, audits); err != nil {
			return err
		}
	}
	for key, values := range audits {
		request.AddAnnotation(ctx, h.policy.Name+"/"+key, strings.Join(values, ", "))
	}
	return nil
}

// binding evaluates the policy for one binding, once per param.
func (d *dispatch) binding(ctx context.Context, h *hook, b *admissionregv1.ValidatingAdmissionPolicyBinding, m match, audits map[string][]string) error {
	ok, err := d.p.bindingMatches(ctx, b.Spec.MatchResources, d.a)
	if err != nil {
		d.configError(err, h.policy, b)
		return nil
	}
	if !ok {
		return nil
	}
	params, err := d.p.collectParams(ctx, h.policy.Spec.ParamKind, b.Spec.ParamRef, d.a.Namespace)
	if err != nil {
		d.configError(err, h.policy, b)
		return nil
	}
	if len(params) == 0 {
		return nil
	}
	va, err := d.versionedAttributes(ctx, m.kind)
	if err != nil {
		d.configError(fmt.Errorf("failed to convert object version: %w", err), h.policy, b)
		return nil
	}
	ns, err := d.namespaceObject(ctx)
	if err != nil {
		return err
	}
	f := failurePolicy(h.policy)
	for _, param := range params {
		in := evalInput{matched: m.resource, attr: va, params: withTypeMeta(param, h.policy.Spec.ParamKind), namespace: ns,
			authz: d.p.cfg.Authorizer, budget: celconfig.RuntimeCELCostBudget}
		res := h.eval.validate(ctx, f, in, d.p.cfg.Logger)
		d.apply(ctx, h.policy, b, res, audits)
	}
	return nil
}

// apply acts on one evaluation as the binding's validationActions say.
func (d *dispatch) apply(ctx context.Context, pol *admissionregv1.ValidatingAdmissionPolicy, b *admissionregv1.ValidatingAdmissionPolicyBinding, res result, audits map[string][]string) {
	for i, dec := range res.decisions {
		if !dec.deny {
			continue
		}
		for _, action := range b.Spec.ValidationActions {
			switch action {
			case admissionregv1.Deny:
				d.denied = append(d.denied, denied{decision: dec, policy: pol.Name, binding: b.Name})
			case admissionregv1.Audit:
				d.failures = append(d.failures, validationFailure{ExpressionIndex: i, Message: dec.message,
					ValidationActions: b.Spec.ValidationActions, Binding: b.Name, Policy: b.Spec.PolicyName})
			case admissionregv1.Warn:
				request.AddWarning(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", pol.Name, b.Name, dec.message))
			}
		}
	}
	for _, a := range res.audits {
		switch {
		case a.err != "":
			d.denied = append(d.denied, denied{decision: decision{deny: true, evalErr: true, message: a.err}, policy: pol.Name, binding: b.Name})
		case a.publish:
			v := a.value
			if len(v) > maxAuditAnnotationValueLength {
				v = v[:maxAuditAnnotationValueLength]
			}
			if !slices.Contains(audits[a.key], v) {
				audits[a.key] = append(audits[a.key], v)
			}
		}
	}
}

// configError is upstream's addConfigError: nothing under failurePolicy Ignore, a denial
// "failed to configure policy/binding: ..." under Fail.
func (d *dispatch) configError(err error, pol *admissionregv1.ValidatingAdmissionPolicy, b *admissionregv1.ValidatingAdmissionPolicyBinding) {
	dn := denied{decision: decision{deny: true}, policy: pol.Name}
	switch f := failurePolicy(pol); f {
	case admissionregv1.Ignore:
		d.p.cfg.Logger.Debug("ValidatingAdmissionPolicy configuration error ignored (failurePolicy Ignore)", "policy", pol.Name, "err", err)
		return
	case admissionregv1.Fail:
		if b == nil {
			dn.message = fmt.Errorf("failed to configure policy: %w", err).Error()
		} else {
			dn.message = fmt.Errorf("failed to configure binding: %w", err).Error()
		}
	default:
		dn.message = fmt.Errorf("unrecognized failure policy: '%v'", f).Error()
	}
	if b != nil {
		dn.binding = b.Name
	}
	d.denied = append(d.denied, dn)
}

// denial is upstream's refusal: admission's Forbidden for the object, with the first
// denial's reason (Invalid by default) and its code, and the message as the one cause.
func (d *dispatch) denial() error {
	first := d.denied[0]
	var msg string
	if first.binding != "" {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", first.policy, first.binding, first.message)
	} else {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", first.policy, first.message)
	}
	// Upstream's NewForbidden names the request's object by the request's name first (a
	// delete too), then by the new object's name or generateName.
	forbidden := admission.NewForbidden(d.a, errors.New(msg))
	if d.a.Name != "" {
		forbidden = apierrors.NewForbidden(d.a.Resource.GroupResource(), d.a.Name, errors.New(msg))
	}
	var se *apierrors.StatusError
	if !errors.As(forbidden, &se) {
		return apierrors.NewInternalError(errors.New(msg))
	}
	reason := first.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	se.ErrStatus.Reason = reason
	se.ErrStatus.Code = reasonToCode(reason)
	if se.ErrStatus.Details == nil {
		se.ErrStatus.Details = &metav1.StatusDetails{}
	}
	se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return se
}

// publishFailures writes the Audit actions' failures as one audit annotation.
func (d *dispatch) publishFailures(ctx context.Context) {
	fs := d.failures
	if len(fs) == 0 {
		return
	}
	if len(fs) > maxValidationFailures {
		fs = fs[:maxValidationFailures]
	}
	js, err := json.Marshal(fs)
	if err != nil {
		d.p.cfg.Logger.Warn("ValidatingAdmissionPolicy: cannot encode the validation failures", "err", err)
		return
	}
	request.AddAnnotation(ctx, validationFailureKey, string(js))
}

// versionedAttributes are the request's objects as kind (converted when a policy matched an
// equivalent resource of another version).
func (d *dispatch) versionedAttributes(ctx context.Context, kind schema.GroupVersionKind) (*k8sadmission.VersionedAttributes, error) {
	if va := d.versioned[kind]; va != nil {
		return va, nil
	}
	obj, old := d.a.Object, d.a.OldObject
	if kind != d.a.Kind {
		if d.p.cfg.Convert == nil {
			return nil, fmt.Errorf("no conversion to %v", kind)
		}
		var err error
		if obj, err = convert(ctx, d.p.cfg.Convert, obj, kind); err != nil {
			return nil, err
		}
		if old, err = convert(ctx, d.p.cfg.Convert, old, kind); err != nil {
			return nil, err
		}
	}
	if d.upstream == nil {
		d.upstream = upstreamAttributes(d.a)
	}
	va := &k8sadmission.VersionedAttributes{Attributes: d.upstream, VersionedKind: kind,
		VersionedObject: k8sadmission.NewLazyObject(obj), VersionedOldObject: k8sadmission.NewLazyObject(old)}
	d.versioned[kind] = va
	return va, nil
}

func convert(ctx context.Context, fn func(context.Context, runtime.Object, schema.GroupVersionKind) (runtime.Object, error), obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	return fn(ctx, obj, kind)
}

// namespaceObject is the request's namespace for namespaceObject (nil for a cluster-scoped
// request and for a namespace itself, as upstream).
func (d *dispatch) namespaceObject(ctx context.Context) (*corev1.Namespace, error) {
	return d.p.namespaceObject(ctx, d.a)
}

// namespaceObject is a's namespace for namespaceObject (nil for a cluster-scoped request
// and for a namespace itself, as upstream); a missing one is NotFound.
func (p *core) namespaceObject(ctx context.Context, a *admission.Attributes) (*corev1.Namespace, error) {
	name := a.Namespace
	if k := a.Kind; k.Group == "" && k.Version == "v1" && k.Kind == "Namespace" {
		name = ""
	}
	if name == "" {
		return nil, nil
	}
	ns, ok := p.namespace(ctx, name)
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}
	return ns, nil
}

func failurePolicy(p *admissionregv1.ValidatingAdmissionPolicy) admissionregv1.FailurePolicyType {
	if p.Spec.FailurePolicy == nil {
		return admissionregv1.Fail
	}
	return *p.Spec.FailurePolicy
}

// reasonToCode is upstream's: the HTTP code of a validation's reason.
func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

// upstreamAttributes is a in k8s.io/apiserver's terms, for the CEL library.
func upstreamAttributes(a *admission.Attributes) k8sadmission.Attributes {
	u := &user.DefaultInfo{}
	if a.User != nil {
		u = &user.DefaultInfo{Name: a.User.Name, UID: a.User.UID, Groups: a.User.Groups, Extra: a.User.Extra}
	}
	return k8sadmission.NewAttributesRecord(a.Object, a.OldObject, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		k8sadmission.Operation(a.Operation), a.Options, a.DryRun, u)
}
