package policy

import (
	"sync"

	celgo "github.com/google/cel-go/cel"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// validationCondition is one validation's expression with what a denial says.
type validationCondition struct {
	Expression string
	Message    string
	Reason     *metav1.StatusReason
}

func (v *validationCondition) GetExpression() string      { return v.Expression }
func (v *validationCondition) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.BoolType} }

// messageCondition is a validation's messageExpression.
type messageCondition struct{ Expression string }

func (m *messageCondition) GetExpression() string      { return m.Expression }
func (m *messageCondition) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.StringType} }

// auditCondition is an auditAnnotation's valueExpression.
type auditCondition struct{ Key, ValueExpression string }

func (a *auditCondition) GetExpression() string { return a.ValueExpression }
func (a *auditCondition) ReturnTypes() []*celgo.Type {
	return []*celgo.Type{celgo.StringType, celgo.NullType}
}

// variable is a named expression the others see as variables.<name>.
type variable struct{ Name, Expression string }

func (v *variable) GetName() string            { return v.Name }
func (v *variable) GetExpression() string      { return v.Expression }
func (v *variable) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType, celgo.DynType} }

var (
	baseEnvOnce sync.Once
	baseEnv     *environment.EnvSet
)

// envTemplate is upstream's composition environment: the base CEL library set at the
// default compatibility version, with strict cost.
func envTemplate() *environment.EnvSet {
	baseEnvOnce.Do(func() { baseEnv = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()) })
	return baseEnv
}

// compiled is a policy's expressions, compiled as upstream's compilePolicy does: in the
// StoredExpressions environment, variables first; params declared when the policy has a
// paramKind, the authorizer everywhere but in messageExpressions. An expression that does
// not compile is kept and fails when evaluated (failurePolicy decides); configErr is a
// policy that cannot be compiled at all.
type compiled struct {
	matcher     matchconditions.Matcher // nil without matchConditions
	validations celplugin.ConditionEvaluator
	messages    celplugin.ConditionEvaluator
	audits      celplugin.ConditionEvaluator
	configErr   error
}

func compile(p *admissionregv1.ValidatingAdmissionPolicy) *compiled {
	hasParams := p.Spec.ParamKind != nil
	opts := celplugin.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	msgOpts := celplugin.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false}
	c, err := celplugin.NewCompositedCompiler(envTemplate())
	if err != nil {
		return &compiled{configErr: err}
	}
	vars := make([]celplugin.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	out := &compiled{}
	if conds := p.Spec.MatchConditions; len(conds) > 0 {
		acc := make([]celplugin.ExpressionAccessor, len(conds))
		for i := range conds {
			acc[i] = (*matchconditions.MatchCondition)(&conds[i])
		}
		out.matcher = matchconditions.NewMatcher(c.CompileCondition(acc, opts, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	vals := make([]celplugin.ExpressionAccessor, len(p.Spec.Validations))
	msgs := make([]celplugin.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		vals[i] = &validationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			msgs[i] = &messageCondition{Expression: v.MessageExpression}
		}
	}
	audits := make([]celplugin.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		audits[i] = &auditCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	out.validations = c.CompileCondition(vals, opts, environment.StoredExpressions)
	out.audits = c.CompileCondition(audits, opts, environment.StoredExpressions)
	out.messages = c.CompileCondition(msgs, msgOpts, environment.StoredExpressions)
	return out
}
