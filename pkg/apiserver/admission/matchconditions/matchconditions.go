// Package matchconditions compiles and evaluates admission webhooks' matchConditions: CEL
// expressions over object, oldObject, request, namespaceObject and authorizer, as
// kube-apiserver's admission/plugin/webhook/matchconditions (whose package pulls in the
// generic server's request plumbing, so hacp keeps its own copy of the environment on
// k8s.io/apiserver/pkg/cel, a leaf library).
package matchconditions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// maxConditions is upstream's limit on matchConditions per webhook.
const maxConditions = 64

var (
	envOnce sync.Once
	envSet  *environment.EnvSet
	envErr  error
)

// env is upstream's match-condition environment: the base library set at the default
// compatibility version plus the admission variables, with the authorizer.
func env() (*environment.EnvSet, error) {
	envOnce.Do(func() {
		req, ns := requestType(), namespaceType()
		envSet, envErr = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(
			environment.VersionedOptions{
				IntroducedVersion: version.MajorMinor(1, 0),
				EnvOptions: []cel.EnvOption{
					cel.Variable("object", cel.DynType),
					cel.Variable("oldObject", cel.DynType),
					cel.Variable("namespaceObject", ns.CelType()),
					cel.Variable("request", req.CelType()),
					cel.Variable("authorizer", library.AuthorizerType),
					cel.Variable("authorizer.requestResource", library.ResourceCheckType),
				},
				DeclTypes: []*apiservercel.DeclType{ns, req},
			},
			environment.StrictCostOpt,
		)
	})
	return envSet, envErr
}

// Condition is one compiled matchCondition.
type Condition struct {
	Name, Expression string
	program          cel.Program
}

// compile compiles one expression in the environment of type t; the error is what
// validation reports ("compilation failed: ...", "must evaluate to bool but got ...").
func compile(expr string, t environment.Type) (cel.Program, error) {
	es, err := env()
	if err != nil {
		return nil, fmt.Errorf("unexpected error loading CEL environment: %v", err)
	}
	e, err := es.Env(t)
	if err != nil {
		return nil, fmt.Errorf("unexpected error loading CEL environment: %v", err)
	}
	ast, issues := e.Compile(expr)
	if issues != nil {
		return nil, errors.New("compilation failed: " + issues.String())
	}
	if !ast.OutputType().IsExactType(cel.BoolType) && !ast.OutputType().IsExactType(cel.AnyType) {
		return nil, fmt.Errorf("must evaluate to %v but got %v", cel.BoolType.String(), ast.OutputType().String())
	}
	prog, err := e.Program(ast, cel.InterruptCheckFrequency(celconfig.CheckFrequency), cel.CostLimit(celconfig.RuntimeCELCostBudgetMatchConditions))
	if err != nil {
		return nil, fmt.Errorf("program instantiation failed: %v", err)
	}
	return prog, nil
}

// Compile compiles stored conditions for evaluation (upstream's StoredExpressions
// environment). A condition that does not compile is kept and fails at evaluation.
func Compile(conds []admissionregv1.MatchCondition) []Condition {
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		p, _ := compile(c.Expression, environment.StoredExpressions)
		out = append(out, Condition{Name: c.Name, Expression: c.Expression, program: p})
	}
	return out
}

// Validate is upstream's validateMatchConditions for a webhook configuration: at most 64,
// names unique qualified names, expressions that compile (in the NewExpressions environment)
// to a bool.
func Validate(conds []admissionregv1.MatchCondition, p *field.Path) field.ErrorList {
	return ValidateWith(conds, p, func(expr string, ep *field.Path) *field.Error {
		if _, err := compile(expr, environment.NewExpressions); err != nil {
			return field.Invalid(ep, expr, err.Error())
		}
		return nil
	})
}

// ValidateWith is Validate with compileErr judging each non-empty (trimmed) expression at
// ep, nil when it compiles: admission policies compile their conditions in their own
// environment and report errors their own way.
func ValidateWith(conds []admissionregv1.MatchCondition, p *field.Path, compileErr func(expr string, ep *field.Path) *field.Error) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxConditions))
	}
	names := sets.New[string]()
	for i, c := range conds {
		cp := p.Index(i)
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		} else if err := compileErr(expr, cp.Child("expression")); err != nil {
			errs = append(errs, err)
		}
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			for _, msg := range validation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

// Input is what the conditions see: the objects and the AdmissionRequest as unstructured
// maps (nil for none), and the requesting user with an authorizer for `authorizer`.
type Input struct {
	Object, OldObject, Namespace map[string]any
	Request                      map[string]any
	User                         user.Info
	Authorizer                   authorizer.UnconditionalAuthorizer
	// Resource is the request's resource, for authorizer.requestResource.
	Resource library.Resource
}

// Match is upstream's matcher: false when any condition is false (whatever the others'
// errors); otherwise the evaluation errors (nil when every condition is true).
func Match(ctx context.Context, conds []Condition, in Input) (bool, error) {
	act := map[string]any{
		"object": orNull(in.Object), "oldObject": orNull(in.OldObject), "namespaceObject": orNull(in.Namespace),
		"request": in.Request,
	}
	if in.Authorizer != nil {
		act["authorizer"] = library.NewAuthorizerVal(in.User, in.Authorizer)
		if in.Resource != nil {
			act["authorizer.requestResource"] = library.NewResourceAuthorizerVal(in.User, in.Authorizer, in.Resource)
		}
	}
	var errs []error
	for _, c := range conds {
		if c.program == nil {
			// Stored but no longer compiling (a library change): an evaluation error.
			_, err := compile(c.Expression, environment.StoredExpressions)
			errs = append(errs, fmt.Errorf("compilation error: %v", err))
			continue
		}
		v, _, err := c.program.ContextEval(ctx, act)
		if err != nil {
			errs = append(errs, fmt.Errorf("expression '%v' resulted in error: %v", c.Expression, err))
			continue
		}
		if v == celtypes.False {
			return false, nil
		}
		if v != celtypes.True {
			errs = append(errs, fmt.Errorf("expression '%v' resulted in error: does not evaluate to a bool", c.Expression))
		}
	}
	if len(errs) > 0 {
		return false, utilerrors.NewAggregate(errs)
	}
	return true, nil
}

func orNull(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// ToMap converts an object to the unstructured map CEL sees.
func ToMap(obj runtime.Object) (map[string]any, error) {
	if obj == nil {
		return nil, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func fields(fs ...*apiservercel.DeclField) map[string]*apiservercel.DeclField {
	out := make(map[string]*apiservercel.DeclField, len(fs))
	for _, f := range fs {
		out[f.Name] = f
	}
	return out
}

func declField(name string, t *apiservercel.DeclType, required bool) *apiservercel.DeclField {
	return apiservercel.NewDeclField(name, t, required, nil, nil)
}

// requestType is upstream's BuildRequestType: kubernetes.AdmissionRequest without uid,
// object and oldObject.
func requestType() *apiservercel.DeclType {
	gvk := apiservercel.NewObjectType("kubernetes.GroupVersionKind", fields(
		declField("group", apiservercel.StringType, true), declField("version", apiservercel.StringType, true), declField("kind", apiservercel.StringType, true)))
	gvr := apiservercel.NewObjectType("kubernetes.GroupVersionResource", fields(
		declField("group", apiservercel.StringType, true), declField("version", apiservercel.StringType, true), declField("resource", apiservercel.StringType, true)))
	userInfo := apiservercel.NewObjectType("kubernetes.UserInfo", fields(
		declField("username", apiservercel.StringType, false),
		declField("uid", apiservercel.StringType, false),
		declField("groups", apiservercel.NewListType(apiservercel.StringType, -1), false),
		declField("extra", apiservercel.NewMapType(apiservercel.StringType, apiservercel.NewListType(apiservercel.StringType, -1), -1), false)))
	return apiservercel.NewObjectType("kubernetes.AdmissionRequest", fields(
		declField("kind", gvk, true), declField("resource", gvr, true), declField("subResource", apiservercel.StringType, false),
		declField("requestKind", gvk, true), declField("requestResource", gvr, true), declField("requestSubResource", apiservercel.StringType, false),
		declField("name", apiservercel.StringType, true), declField("namespace", apiservercel.StringType, false),
		declField("operation", apiservercel.StringType, true), declField("userInfo", userInfo, true),
		declField("dryRun", apiservercel.BoolType, false), declField("options", apiservercel.DynType, false)))
}

// namespaceType is upstream's BuildNamespaceType.
func namespaceType() *apiservercel.DeclType {
	spec := apiservercel.NewObjectType("kubernetes.NamespaceSpec", fields(
		declField("finalizers", apiservercel.NewListType(apiservercel.StringType, -1), true)))
	cond := apiservercel.NewObjectType("kubernetes.NamespaceCondition", fields(
		declField("status", apiservercel.StringType, true), declField("type", apiservercel.StringType, true),
		declField("lastTransitionTime", apiservercel.TimestampType, true), declField("message", apiservercel.StringType, true),
		declField("reason", apiservercel.StringType, true)))
	status := apiservercel.NewObjectType("kubernetes.NamespaceStatus", fields(
		declField("conditions", apiservercel.NewListType(cond, -1), true), declField("phase", apiservercel.StringType, true)))
	meta := apiservercel.NewObjectType("kubernetes.NamespaceMetadata", fields(
		declField("name", apiservercel.StringType, true), declField("generateName", apiservercel.StringType, true),
		declField("namespace", apiservercel.StringType, true),
		declField("labels", apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, -1), true),
		declField("annotations", apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, -1), true),
		declField("UID", apiservercel.StringType, true), declField("creationTimestamp", apiservercel.TimestampType, true),
		declField("deletionGracePeriodSeconds", apiservercel.IntType, true), declField("deletionTimestamp", apiservercel.TimestampType, true),
		declField("generation", apiservercel.IntType, true), declField("resourceVersion", apiservercel.StringType, true),
		declField("finalizers", apiservercel.NewListType(apiservercel.StringType, -1), true)))
	return apiservercel.NewObjectType("kubernetes.Namespace", fields(
		declField("metadata", meta, true), declField("spec", spec, true), declField("status", status, true)))
}
