package registry

import (
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
// new-expressions one (upstream's choice). Upstream also refuses rules whose estimated cost
// exceeds its budget; that estimate needs the validation package hacp does not import, so
// rules are only limited when they run (celCostBudget).
func validateCRDRules(ss *structuralschema.Structural, preexisting sets.Set[string], p *field.Path) field.ErrorList {
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	var errs field.ErrorList
	var walk func(s *structuralschema.Structural, declType *apiservercel.DeclType, p *field.Path)
	walk = func(s *structuralschema.Structural, declType *apiservercel.DeclType, p *field.Path) {
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
				if cr.Error != nil {
					if cr.Error.Type == apiservercel.ErrorTypeRequired {
						errs = append(errs, field.Required(vp.Index(i).Child("rule"), cr.Error.Detail))
					} else {
						errs = append(errs, field.Invalid(vp.Index(i).Child("rule"), s.XValidations[i], cr.Error.Detail))
					}
				}
				if cr.MessageExpressionError != nil {
					errs = append(errs, field.Invalid(vp.Index(i).Child("messageExpression"), s.XValidations[i], cr.MessageExpressionError.Detail))
				}
			}
		}
		for k, prop := range s.Properties {
			var fieldType *apiservercel.DeclType
			if escaped, ok := apiservercel.Escape(k); ok {
				if f, ok := declType.Fields[escaped]; ok {
					fieldType = f.Type
				}
			} else {
				fieldType = model.SchemaDeclType(&prop, prop.XEmbeddedResource)
			}
			walk(&prop, fieldType, p.Child("properties").Key(k))
		}
		walk(s.Items, declType.ElemType, p.Child("items"))
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Structural, declType.ElemType, p.Child("additionalProperties"))
		}
	}
	walk(ss, model.SchemaDeclType(ss, true), p)
	return errs
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
