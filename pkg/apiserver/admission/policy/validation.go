package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	hacpconditions "github.com/hacp/hacp/pkg/apiserver/admission/matchconditions"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

var (
	celIdentifier = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
	celReserved   = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
		"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
	policyReasons = []metav1.StatusReason{metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonRequestEntityTooLarge}
	newlines      = regexp.MustCompile(`[\n\r]+`)
)

// ValidateExpressions is the CEL part of upstream's validateValidatingAdmissionPolicySpec: the
// variables, validations (expression, messageExpression, message, reason), matchConditions
// and auditAnnotations of a policy named name must compile, in the environment for new
// expressions, to what they must return, with upstream's field paths and messages.
func ValidateExpressions(name string, spec *admissionregv1.ValidatingAdmissionPolicySpec, p *field.Path) field.ErrorList {
	c, err := celplugin.NewCompositedCompiler(envTemplate())
	if err != nil {
		return field.ErrorList{field.InternalError(p, err)}
	}
	hasParams := spec.ParamKind != nil
	opts := celplugin.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	errs := validateConditionsAndVariables(c, spec.MatchConditions, spec.Variables, opts, p)
	for i, v := range spec.Validations {
		errs = append(errs, validateValidation(c, v, hasParams, p.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		errs = append(errs, validateAuditAnnotation(c, name, a, opts, ap)...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

// validateConditionsAndVariables checks a policy's matchConditions, then compiles and stores
// its variables in c for the expressions that use them, as upstream's validation.
func validateConditionsAndVariables(c *celplugin.CompositedCompiler, conds []admissionregv1.MatchCondition, vars []admissionregv1.Variable,
	opts celplugin.OptionalVariableDeclarations, p *field.Path) field.ErrorList {
	errs := validateMatchConditions(conds, opts, p.Child("matchConditions"))
	for i, v := range vars {
		vp := p.Child("variables").Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		} else if !celIdentifier.MatchString(v.Name) || celReserved.Has(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
			continue
		}
		acc := &variable{Name: v.Name, Expression: v.Expression}
		if r := c.CompileAndStoreVariable(acc, opts, environment.NewExpressions); r.Error != nil {
			errs = append(errs, celError(vp.Child("expression"), acc, r.Error))
		}
	}
	return errs
}

// ValidateMutatingExpressions is the CEL part of upstream's
// validateMutatingAdmissionPolicySpec: the matchConditions and variables (conds), and each
// mutation's ApplyConfiguration or JSONPatch expression (mutations, by index) must compile,
// in the environment for new expressions, to what they must return, with upstream's field
// paths and messages. p is the spec's path.
func ValidateMutatingExpressions(spec *admissionregv1.MutatingAdmissionPolicySpec, p *field.Path) (conds field.ErrorList, mutations map[int]field.ErrorList) {
	c, err := celplugin.NewCompositedCompiler(envTemplate())
	if err != nil {
		return field.ErrorList{field.InternalError(p, err)}, nil
	}
	opts := celplugin.OptionalVariableDeclarations{HasParams: spec.ParamKind != nil, HasAuthorizer: true}
	conds = validateConditionsAndVariables(c, spec.MatchConditions, spec.Variables, opts, p)
	mutations = map[int]field.ErrorList{}
	opts.HasPatchTypes = true
	for i, m := range spec.Mutations {
		var acc celplugin.ExpressionAccessor
		mp := p.Child("mutations").Index(i)
		switch {
		case m.PatchType == admissionregv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			mp = mp.Child("applyConfiguration", "expression")
			acc = &patch.ApplyConfigurationCondition{Expression: strings.TrimSpace(m.ApplyConfiguration.Expression)}
		case m.PatchType == admissionregv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			mp = mp.Child("jsonPatch", "expression")
			acc = &patch.JSONPatchCondition{Expression: strings.TrimSpace(m.JSONPatch.Expression)}
		default:
			continue
		}
		if acc.GetExpression() == "" {
			mutations[i] = field.ErrorList{field.Required(mp, "")}
		} else if r := c.CompileCELExpression(acc, opts, environment.NewExpressions); r.Error != nil {
			mutations[i] = field.ErrorList{celError(mp, acc, r.Error)}
		}
	}
	return conds, mutations
}

// validateMatchConditions compiles the conditions without the variables, as upstream.
func validateMatchConditions(conds []admissionregv1.MatchCondition, opts celplugin.OptionalVariableDeclarations, p *field.Path) field.ErrorList {
	c := celplugin.NewCompiler(envTemplate())
	return hacpconditions.ValidateWith(conds, p, func(expr string, ep *field.Path) *field.Error {
		acc := &matchconditions.MatchCondition{Expression: expr}
		if r := c.CompileCELExpression(acc, opts, environment.NewExpressions); r.Error != nil {
			return celError(ep, acc, r.Error)
		}
		return nil
	})
}

func validateValidation(c *celplugin.CompositedCompiler, v admissionregv1.Validation, hasParams bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		acc := &validationCondition{Expression: v.Expression}
		if r := c.CompileCELExpression(acc, celplugin.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, environment.NewExpressions); r.Error != nil {
			errs = append(errs, celError(p.Child("expression"), acc, r.Error))
		}
	}
	if v.MessageExpression != "" && strings.TrimSpace(v.MessageExpression) == "" {
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if v.MessageExpression != "" {
		acc := &messageCondition{Expression: v.MessageExpression}
		if r := c.CompileCELExpression(acc, celplugin.OptionalVariableDeclarations{HasParams: hasParams}, environment.NewExpressions); r.Error != nil {
			errs = append(errs, celError(p.Child("messageExpression"), acc, r.Error))
		}
	}
	msg := strings.TrimSpace(v.Message)
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	} else if newlines.MatchString(msg) {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !slices.Contains(policyReasons, *v.Reason) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, []string{"Forbidden", "Invalid", "RequestEntityTooLarge"}))
	}
	return errs
}

func validateAuditAnnotation(c *celplugin.CompositedCompiler, name string, a admissionregv1.AuditAnnotation, opts celplugin.OptionalVariableDeclarations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name != "" {
		for _, msg := range validation.IsQualifiedName(name + "/" + a.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), name+"/"+a.Key, msg))
		}
	} else {
		errs = append(errs, field.Invalid(p.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	expr := strings.TrimSpace(a.ValueExpression)
	switch {
	case expr == "":
		errs = append(errs, field.Required(p.Child("valueExpression"), "valueExpression is not specified"))
	case len(expr) > maxAuditAnnotationValueExpressionLength:
		errs = append(errs, field.Required(p.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	default:
		acc := &auditCondition{Key: a.Key, ValueExpression: expr}
		if r := c.CompileCELExpression(acc, opts, environment.NewExpressions); r.Error != nil {
			errs = append(errs, celError(p.Child("valueExpression"), &auditCondition{ValueExpression: a.ValueExpression}, r.Error))
		}
	}
	return errs
}

// celError is upstream's convertCELErrorToValidationError.
func celError(p *field.Path, acc celplugin.ExpressionAccessor, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(p, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(p, acc.GetExpression(), err.Detail)
	}
	return field.InternalError(p, err)
}
