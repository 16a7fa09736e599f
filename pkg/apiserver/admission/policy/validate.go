package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	celtypes "github.com/google/cel-go/common/types"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// decision is the outcome of one validation: admit, or deny with a message and reason. An
// evaluation error is a deny under failurePolicy Fail and an admit under Ignore.
type decision struct {
	deny    bool
	evalErr bool
	message string
	reason  metav1.StatusReason
}

// auditResult is one auditAnnotation: published (value), excluded, or an error (a denial
// under failurePolicy Fail).
type auditResult struct {
	key, value string
	err        string
	publish    bool
}

// result is what one policy says of one request with one param.
type result struct {
	decisions []decision
	audits    []auditResult
}

// evalInput is what a policy's expressions see.
type evalInput struct {
	matched   schema.GroupVersionResource
	attr      *k8sadmission.VersionedAttributes
	params    runtime.Object
	namespace *corev1.Namespace
	authz     authorizer.UnconditionalAuthorizer
	budget    int64
}

func errorDecision(f admissionregv1.FailurePolicyType, msg string) decision {
	return decision{deny: f != admissionregv1.Ignore, evalErr: true, message: msg}
}

// validate is upstream's validator.Validate: the matchConditions, then every validation
// (with its messageExpression), then the auditAnnotations.
func (c *compiled) validate(ctx context.Context, f admissionregv1.FailurePolicyType, in evalInput, log *slog.Logger) result {
	if c.configErr != nil {
		return result{decisions: []decision{errorDecision(f, c.configErr.Error())}}
	}
	if c.matcher != nil {
		m := c.matcher.Match(ctx, in.attr, in.params, in.authz)
		if m.Error != nil {
			return result{decisions: []decision{errorDecision(f, m.Error.Error())}}
		}
		if !m.Matches {
			return result{}
		}
	}
	vars := celplugin.OptionalVariableBindings{VersionedParams: in.params, Authorizer: in.authz}
	exprVars := celplugin.OptionalVariableBindings{VersionedParams: in.params}
	req := celplugin.CreateAdmissionRequest(in.attr.Attributes, metav1.GroupVersionResource(in.matched), metav1.GroupVersionKind(in.attr.VersionedKind))
	ns := celplugin.CreateNamespaceObject(in.namespace)
	evals, remaining, err := c.validations.ForInput(ctx, in.attr, req, vars, ns, in.budget)
	if err != nil {
		return result{decisions: []decision{errorDecision(f, err.Error())}}
	}
	msgs, _, msgErr := c.messages.ForInput(ctx, in.attr, req, exprVars, ns, remaining)
	out := result{decisions: make([]decision, len(evals))}
	for i, ev := range evals {
		v, ok := ev.ExpressionAccessor.(*validationCondition)
		switch {
		case !ok:
			out.decisions[i] = errorDecision(f, "Invalid type sent to validator, expected ValidationCondition")
		case ev.Error != nil:
			out.decisions[i] = errorDecision(f, ev.Error.Error())
		case errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget):
			out.decisions[i] = errorDecision(f, fmt.Sprintf("failed messageExpression: %s", msgErr))
		case ev.EvalResult != celtypes.True:
			var mr *celplugin.EvaluationResult
			if i < len(msgs) {
				mr = &msgs[i]
			}
			out.decisions[i] = denial(v, mr, log)
		}
	}
	auditEvals, _, err := c.audits.ForInput(ctx, in.attr, req, exprVars, in.namespace, in.budget)
	if err != nil {
		return result{decisions: []decision{errorDecision(f, err.Error())}}
	}
	for _, ev := range auditEvals {
		if ev.ExpressionAccessor == nil {
			continue
		}
		out.audits = append(out.audits, auditOf(f, ev))
	}
	return out
}

// denial is a failed validation's decision: the reason (Invalid by default) and the message
// from messageExpression, else message, else "failed expression: <expression>".
func denial(v *validationCondition, mr *celplugin.EvaluationResult, log *slog.Logger) decision {
	d := decision{deny: true, reason: metav1.StatusReasonInvalid}
	if v.Reason != nil {
		d.reason = *v.Reason
	}
	var msg string
	if mr != nil && mr.Error == nil && mr.EvalResult != nil {
		if s, ok := mr.EvalResult.Value().(string); ok {
			msg = strings.TrimSpace(s)
			// Too long or multi-line messages are not used, as upstream.
			if len(msg) > celconfig.MaxEvaluatedMessageExpressionSizeBytes || strings.ContainsAny(msg, "\n") {
				msg = ""
			}
		}
	}
	if mr != nil && mr.Error != nil {
		log.Debug("ValidatingAdmissionPolicy: messageExpression failed", "err", mr.Error)
	}
	if msg == "" {
		msg = strings.TrimSpace(v.Message)
	}
	if msg == "" {
		msg = fmt.Sprintf("failed expression: %v", strings.TrimSpace(v.Expression))
	}
	d.message = msg
	return d
}

// auditOf is one auditAnnotation's result: a non-empty string is published, null or an
// empty string excluded, anything else an error; an evaluation error is an error under
// failurePolicy Fail and excluded under Ignore.
func auditOf(f admissionregv1.FailurePolicyType, ev celplugin.EvaluationResult) auditResult {
	a, ok := ev.ExpressionAccessor.(*auditCondition)
	if !ok {
		return auditResult{err: fmt.Sprintf("Invalid type sent to validator, expected AuditAnnotationCondition but got %T", ev.ExpressionAccessor)}
	}
	r := auditResult{key: a.Key}
	switch {
	case ev.Error != nil:
		if f != admissionregv1.Ignore {
			r.err = ev.Error.Error()
		}
	case ev.EvalResult.Type() == celtypes.StringType:
		if v := strings.TrimSpace(ev.EvalResult.Value().(string)); v != "" {
			r.publish, r.value = true, v
		}
	case ev.EvalResult.Type() == celtypes.NullType:
	default:
		r.err = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. Return type must be either string or null.", a.ValueExpression, ev.EvalResult.Type())
	}
	return r
}
