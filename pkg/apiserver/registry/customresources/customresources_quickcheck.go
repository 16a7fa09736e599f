package customresources

import (
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// quickSchema is a custom resource's OpenAPI schema when it constrains nothing but types,
// properties, additional properties, items and required keys: against such a schema, what
// kube-openapi's validator checks of an object is that every value has its node's type and
// that the required keys are there, which a walk of the object can confirm without building
// the validator's per-field validators and results (most of a simple schema's validation
// cost). quickSchema only ever confirms: an object it does not pass, or a schema it cannot
// express, goes to kube-openapi, which gives the verdict and the errors as before.
type quickSchema struct {
	typ        string // "" (any), object, array, string, integer, number or boolean
	properties map[string]*quickSchema
	additional *quickSchema // additionalProperties' schema; nil: any value
	items      *quickSchema // nil: any items
	required   []string
}

// newQuickSchema returns s as a quickSchema, or false when any node of s uses something
// kube-openapi's validator checks beyond those: formats, bounds, lengths, patterns, enums,
// unique items, property counts, allOf/anyOf/oneOf/not, pattern properties, dependencies,
// tuple items, additional items, additionalProperties false, references, several types.
// What the validator does not read (descriptions, titles, defaults, examples, nullable,
// vendor extensions) does not matter here.
func newQuickSchema(s *spec.Schema) (*quickSchema, bool) {
	if s == nil {
		return nil, false
	}
	p := &s.SchemaProps
	if p.ID != "" || p.Ref.String() != "" || p.Schema != "" || p.Format != "" ||
		p.Maximum != nil || p.ExclusiveMaximum || p.Minimum != nil || p.ExclusiveMinimum ||
		p.MaxLength != nil || p.MinLength != nil || p.Pattern != "" ||
		p.MaxItems != nil || p.MinItems != nil || p.UniqueItems || p.MultipleOf != nil ||
		p.Enum != nil || p.MaxProperties != nil || p.MinProperties != nil ||
		len(p.AllOf) > 0 || len(p.OneOf) > 0 || len(p.AnyOf) > 0 || p.Not != nil ||
		len(p.PatternProperties) > 0 || len(p.Dependencies) > 0 || p.AdditionalItems != nil ||
		len(p.Definitions) > 0 || len(p.Type) > 1 {
		return nil, false
	}
	q := &quickSchema{required: p.Required}
	if len(p.Type) == 1 {
		switch t := p.Type[0]; t {
		case "object", "array", "string", "integer", "number", "boolean":
			q.typ = t
		default:
			return nil, false
		}
	}
	if len(p.Properties) > 0 {
		q.properties = make(map[string]*quickSchema, len(p.Properties))
		for name, ps := range p.Properties {
			pq, ok := newQuickSchema(&ps)
			if !ok {
				return nil, false
			}
			q.properties[name] = pq
		}
	}
	if a := p.AdditionalProperties; a != nil {
		switch {
		case a.Schema != nil:
			aq, ok := newQuickSchema(a.Schema)
			if !ok {
				return nil, false
			}
			q.additional = aq
		case !a.Allows:
			return nil, false
		}
	}
	if it := p.Items; it != nil {
		if len(it.Schemas) > 0 {
			return nil, false
		}
		if it.Schema != nil {
			iq, ok := newQuickSchema(it.Schema)
			if !ok {
				return nil, false
			}
			q.items = iq
		}
	}
	return q, true
}

// valid reports whether v certainly passes kube-openapi's validation against the schema q
// was made from. It declines (false, "not known") rather than decide anything subtle: a
// null anywhere (nullable is the validator's business), a float where an integer is wanted
// (the validator takes integral ones), and any Go type JSON decoding does not produce.
func (q *quickSchema) valid(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if q.typ != "" && q.typ != "object" {
			return false
		}
		for _, k := range q.required {
			if _, ok := v[k]; !ok {
				return false
			}
		}
		for k, e := range v {
			s := q.properties[k]
			if s == nil {
				s = q.additional
			}
			if s != nil && !s.valid(e) {
				return false
			}
		}
		return true
	case []any:
		if q.typ != "" && q.typ != "array" {
			return false
		}
		if q.items != nil {
			for _, e := range v {
				if !q.items.valid(e) {
					return false
				}
			}
		}
		return true
	case string:
		return q.typ == "" || q.typ == "string"
	case bool:
		return q.typ == "" || q.typ == "boolean"
	case int64:
		return q.typ == "" || q.typ == "integer" || q.typ == "number"
	case float64:
		return q.typ == "" || q.typ == "number"
	}
	return false
}
