package customresources

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	celgo "github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// validateCRDRules compiles every x-kubernetes-validations rule and messageExpression of a
// structural schema, as upstream's definition validation does, so that a rule that does not
// compile refuses the definition (422) instead of every object later. Rules the definition
// had before compile in the stored-expressions environment, new ones in the
// new-expressions one (upstream's choice). Each expression's estimated cost (times how many
// times it may run: the product of maxItems/maxProperties above it, or CEL's own estimate
// where a list or map above it is unbounded) must stay within upstream's per-expression
// limit, and their sum within its limit for the whole schema.
func validateCRDRules(ss *structuralschema.Structural, preexisting sets.Set[string], p *field.Path) field.ErrorList {
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	var errs field.ErrorList
	var total uint64
	var expensive []ruleCost
	observe := func(p *field.Path, cost uint64) {
		total = addWithOverflowGuard(total, cost)
		if cost >= staticEstimatedCRDCostLimit/100 { // upstream names the top 4 of at least 1% of the limit
			expensive = append(expensive, ruleCost{p, cost})
			slices.SortStableFunc(expensive, func(a, b ruleCost) int { return cmp.Compare(b.cost, a.cost) })
			expensive = expensive[:min(len(expensive), 4)]
		}
	}
	// card is how many times a rule of s may run per object: nil when unbounded.
	var walk func(s *structuralschema.Structural, declType *apiservercel.DeclType, card *uint64, p *field.Path)
	walk = func(s *structuralschema.Structural, declType *apiservercel.DeclType, card *uint64, p *field.Path) {
		if s == nil || declType == nil {
			return
		}
		if len(s.XValidations) > 0 {
			vp := p.Child("x-kubernetes-validations")
			results, err := cel.Compile(s, declType, celPerCallLimit, envSet, celEnvLoader{preexisting})
			if err != nil {
				errs = append(errs, field.InternalError(vp, err))
			}
			for i, cr := range results {
				cost := expressionCost(cr.MaxCost, cr.MaxCardinality, card)
				if cost > staticEstimatedCostLimit {
					errs = append(errs, field.Forbidden(vp.Index(i).Child("rule"), costErrorMessage("estimated rule cost", cost, staticEstimatedCostLimit)))
				}
				observe(vp.Index(i).Child("rule"), cost)
				if cr.Error != nil {
					if cr.Error.Type == apiservercel.ErrorTypeRequired {
						errs = append(errs, field.Required(vp.Index(i).Child("rule"), cr.Error.Detail))
					} else {
						errs = append(errs, field.Invalid(vp.Index(i).Child("rule"), s.XValidations[i], cr.Error.Detail))
					}
				}
				if cr.MessageExpressionError != nil {
					errs = append(errs, field.Invalid(vp.Index(i).Child("messageExpression"), s.XValidations[i], cr.MessageExpressionError.Detail))
				} else if cr.MessageExpression != nil {
					if cr.MessageExpressionMaxCost > staticEstimatedCostLimit {
						errs = append(errs, field.Forbidden(vp.Index(i).Child("messageExpression"), costErrorMessage("estimated messageExpression cost", cr.MessageExpressionMaxCost, staticEstimatedCostLimit)))
					}
					observe(vp.Index(i).Child("messageExpression"), cr.MessageExpressionMaxCost)
				}
			}
		}
		childCard := childCardinality(s, card)
		for k, prop := range s.Properties {
			var fieldType *apiservercel.DeclType
			if escaped, ok := apiservercel.Escape(k); ok {
				if f, ok := declType.Fields[escaped]; ok {
					fieldType = f.Type
				}
			} else {
				fieldType = model.SchemaDeclType(&prop, prop.XEmbeddedResource)
			}
			walk(&prop, fieldType, childCard, p.Child("properties").Key(k))
		}
		walk(s.Items, declType.ElemType, childCard, p.Child("items"))
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Structural, declType.ElemType, childCard, p.Child("additionalProperties"))
		}
	}
	one := uint64(1)
	walk(ss, model.SchemaDeclType(ss, true), &one, p)
	if total > staticEstimatedCRDCostLimit {
		for _, e := range expensive {
			errs = append(errs, field.Forbidden(e.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
		}
		errs = append(errs, field.Forbidden(p, costErrorMessage("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", total, staticEstimatedCRDCostLimit)))
	}
	return errs
}

// Upstream's StaticEstimatedCostLimit and StaticEstimatedCRDCostLimit.
const (
	staticEstimatedCostLimit    = 10000000
	staticEstimatedCRDCostLimit = 100000000
)

type ruleCost struct {
	path *field.Path
	cost uint64
}

// childCardinality is how many times the children of s may occur per object, given that s
// may occur card times (nil: unbounded): an object's fields as often as the object, a list's
// items maxItems times as often, a map's values maxProperties times.
func childCardinality(s *structuralschema.Structural, card *uint64) *uint64 {
	if card == nil {
		return nil
	}
	factor := uint64(1)
	switch {
	case s.Type == "array":
		if s.ValueValidation == nil || s.ValueValidation.MaxItems == nil {
			return nil
		}
		factor = uint64(max(*s.ValueValidation.MaxItems, 0))
	case s.Type == "object" && s.AdditionalProperties != nil:
		if s.ValueValidation == nil || s.ValueValidation.MaxProperties == nil {
			return nil
		}
		factor = uint64(max(*s.ValueValidation.MaxProperties, 0))
	}
	n := multiplyWithOverflowGuard(*card, factor)
	return &n
}

// expressionCost is upstream's getExpressionCost: the expression's cost times the bounded
// cardinality, or times CEL's own estimate of it where unbounded.
func expressionCost(cost, celCardinality uint64, card *uint64) uint64 {
	if card != nil {
		return multiplyWithOverflowGuard(cost, *card)
	}
	return multiplyWithOverflowGuard(cost, celCardinality)
}

func multiplyWithOverflowGuard(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

func addWithOverflowGuard(a, b uint64) uint64 {
	if math.MaxUint64-a < b {
		return math.MaxUint64
	}
	return a + b
}

// costErrorMessage is upstream's getCostErrorMessage.
func costErrorMessage(name string, cost, limit uint64) string {
	factor := float64(cost) / float64(limit)
	var f string
	switch {
	case factor > 100.0:
		f = "more than 100x"
	case factor < 1.5:
		f = fmt.Sprintf("%fx", factor)
	default:
		f = fmt.Sprintf("%.1fx", factor)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", name, f)
}

// celEnvLoader picks the environment of each expression as upstream's definition
// validation does.
type celEnvLoader struct{ preexisting sets.Set[string] }

func (l celEnvLoader) RuleEnv(envSet *environment.EnvSet, expr string) *celgo.Env {
	if l.preexisting.Has(expr) {
		return envSet.StoredExpressionsEnv()
	}
	return envSet.NewExpressionsEnv()
}

func (l celEnvLoader) MessageExpressionEnv(envSet *environment.EnvSet, expr string) *celgo.Env {
	return l.RuleEnv(envSet, expr)
}

// crdExpressions are the rules and messageExpressions of every version's schema of crd.
func crdExpressions(crd *apiextensionsv1.CustomResourceDefinition) sets.Set[string] {
	out := sets.New[string]()
	if crd == nil {
		return out
	}
	var walk func(s *apiextensionsv1.JSONSchemaProps)
	walk = func(s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		for _, r := range s.XValidations {
			out.Insert(r.Rule)
			if r.MessageExpression != "" {
				out.Insert(r.MessageExpression)
			}
		}
		for _, p := range s.Properties {
			walk(&p)
		}
		if s.Items != nil {
			walk(s.Items.Schema)
			for i := range s.Items.JSONSchemas {
				walk(&s.Items.JSONSchemas[i])
			}
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
		for _, group := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
			for i := range group {
				walk(&group[i])
			}
		}
		walk(s.Not)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			walk(v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

// validateCRDVersionRules compiles the rules of every version's schema (see
// validateCRDRules); old is the definition before an update, nil on create. A schema that
// is not structural is left to validateCRDSchema.
func validateCRDVersionRules(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	preexisting := crdExpressions(old)
	var errs field.ErrorList
	for i, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal, err := internalSchema(v.Schema.OpenAPIV3Schema)
		if err != nil {
			continue
		}
		ss, err := structuralschema.NewStructural(internal)
		if err != nil || len(structuralschema.ValidateStructural(nil, ss)) > 0 {
			continue
		}
		errs = append(errs, validateCRDRules(ss, preexisting, field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"))...)
	}
	return errs
}
