package customresources

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	celmodel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// quickSchemaOf builds s as customKind does: the internal schema, kube-openapi's schema and
// validator, and the quickSchema of that (nil when newQuickSchema declines).
func quickSchemaOf(t *testing.T, s *apiextensionsv1.JSONSchemaProps) (*quickSchema, apiservervalidation.SchemaValidator, *spec.Schema) {
	t.Helper()
	internal, err := internalSchema(s)
	if err != nil {
		t.Fatalf("internal schema: %v", err)
	}
	validator, openAPISchema, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatalf("validator: %v", err)
	}
	q, ok := newQuickSchema(openAPISchema)
	if ok != (q != nil) {
		t.Fatalf("newQuickSchema: %v and %v", q, ok)
	}
	return q, validator, openAPISchema
}

// checkQuickAgrees fails when q passes obj but kube-openapi's validator, on a create or on
// a ratcheted update from old, finds anything wrong with it.
func checkQuickAgrees(t *testing.T, q *quickSchema, validator apiservervalidation.SchemaValidator, s *apiextensionsv1.JSONSchemaProps, obj, old map[string]any) bool {
	t.Helper()
	if q == nil || !q.valid(obj) {
		return false
	}
	if errs := apiservervalidation.ValidateCustomResource(nil, obj, validator); len(errs) > 0 {
		schemaJSON, _ := json.Marshal(s)
		t.Fatalf("quickSchema passed %v, kube-openapi found %v\nschema %s", obj, errs, schemaJSON)
	}
	if old != nil {
		internal, _ := internalSchema(s)
		ss, err := structuralschema.NewStructural(internal)
		if err == nil {
			correlated := common.NewCorrelatedObject(obj, old, &celmodel.Structural{Structural: ss})
			if errs := apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, validator, apiservervalidation.WithRatcheting(correlated)); len(errs) > 0 {
				t.Fatalf("quickSchema passed %v, the ratcheted update from %v found %v", obj, old, errs)
			}
		}
	}
	return true
}

// TestQuickSchemaCases: objects the quick check must pass (so custom kinds with such
// schemas do skip the validator) and ones it must leave to kube-openapi, which then gives
// the error through the kind's strategy.
func TestQuickSchemaCases(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	bench := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"data": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}}}}
	nested := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Required: []string{"replicas"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"ratio":    {Type: "number", Nullable: true},
			"on":       {Type: "boolean"},
			"tags":     {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"extra":    {Type: "object", XPreserveUnknownFields: ptr.To(true)},
			"any":      {XPreserveUnknownFields: ptr.To(true)},
		}}}}
	meta := map[string]any{"name": "a", "namespace": "ns", "labels": map[string]any{"x": "y"}}
	obj := func(fields map[string]any) map[string]any {
		o := map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": meta}
		for k, v := range fields {
			o[k] = v
		}
		return o
	}
	for _, c := range []struct {
		name   string
		schema *apiextensionsv1.JSONSchemaProps
		obj    map[string]any
		quick  bool   // the quick check passes it
		errAt  string // else the field kube-openapi's error names ("": none)
	}{
		{"bench object", bench, obj(map[string]any{"data": map[string]any{"key": "value"}}), true, ""},
		{"bench, no data", bench, obj(nil), true, ""},
		{"bench, integer value", bench, obj(map[string]any{"data": map[string]any{"key": int64(1)}}), false, "data.key"},
		{"bench, data a string", bench, obj(map[string]any{"data": "x"}), false, "data"},
		{"nested", nested, obj(map[string]any{"spec": map[string]any{"replicas": int64(3), "ratio": 0.5, "on": true,
			"tags": []any{"a", "b"}, "extra": map[string]any{"k": []any{int64(1), nil}}, "any": int64(7)}}), true, ""},
		{"number takes an integer", nested, obj(map[string]any{"spec": map[string]any{"replicas": int64(3), "ratio": int64(1)}}), true, ""},
		{"missing required", nested, obj(map[string]any{"spec": map[string]any{"on": true}}), false, "spec.replicas"},
		{"integral float for an integer", nested, obj(map[string]any{"spec": map[string]any{"replicas": float64(3)}}), false, ""},
		{"fractional float for an integer", nested, obj(map[string]any{"spec": map[string]any{"replicas": 2.5}}), false, "spec.replicas"},
		{"null where nullable", nested, obj(map[string]any{"spec": map[string]any{"replicas": int64(1), "ratio": nil}}), false, ""},
		{"null where not nullable", nested, obj(map[string]any{"spec": map[string]any{"replicas": int64(1), "on": nil}}), false, "spec.on"},
		{"item of the wrong type", nested, obj(map[string]any{"spec": map[string]any{"replicas": int64(1), "tags": []any{"a", true}}}), false, "spec.tags[1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, validator, _ := quickSchemaOf(t, c.schema)
			if q == nil {
				t.Fatal("newQuickSchema declined the schema")
			}
			if got := checkQuickAgrees(t, q, validator, c.schema, c.obj, nil); got != c.quick {
				t.Fatalf("quick check %v, want %v", got, c.quick)
			}
			errs := apiservervalidation.ValidateCustomResource(nil, c.obj, validator)
			if c.errAt == "" && len(errs) > 0 || c.errAt != "" && (len(errs) == 0 || errs[0].Field != c.errAt) {
				t.Fatalf("kube-openapi found %v, want an error at %q", errs, c.errAt)
			}
		})
	}
}

// TestQuickSchemaDeclines: every keyword kube-openapi checks beyond types, properties,
// items and required keys makes newQuickSchema decline the whole schema, wherever it is.
func TestQuickSchemaDeclines(t *testing.T) {
	one, f := int64(1), 1.0
	for name, leaf := range map[string]apiextensionsv1.JSONSchemaProps{
		"format":           {Type: "string", Format: "date-time"},
		"maxLength":        {Type: "string", MaxLength: &one},
		"minLength":        {Type: "string", MinLength: &one},
		"pattern":          {Type: "string", Pattern: "^a$"},
		"enum":             {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}}},
		"maximum":          {Type: "integer", Maximum: &f},
		"minimum":          {Type: "integer", Minimum: &f},
		"multipleOf":       {Type: "number", MultipleOf: &f},
		"maxItems":         {Type: "array", MaxItems: &one},
		"minItems":         {Type: "array", MinItems: &one},
		"maxProperties":    {Type: "object", MaxProperties: &one},
		"minProperties":    {Type: "object", MinProperties: &one},
		"anyOf":            {Type: "object", AnyOf: []apiextensionsv1.JSONSchemaProps{{Required: []string{"a"}}}},
		"oneOf":            {Type: "object", OneOf: []apiextensionsv1.JSONSchemaProps{{Required: []string{"a"}}}},
		"allOf":            {Type: "object", AllOf: []apiextensionsv1.JSONSchemaProps{{Required: []string{"a"}}}},
		"not":              {Type: "object", Not: &apiextensionsv1.JSONSchemaProps{Required: []string{"a"}}},
		"int-or-string":    {XIntOrString: true},
		"no extra keys":    {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: false}},
		"tuple items":      {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{{Type: "string"}}}},
		"embedded (types)": {Type: "object", XEmbeddedResource: true, Properties: map[string]apiextensionsv1.JSONSchemaProps{"apiVersion": {Type: "string", MaxLength: &one}}},
	} {
		t.Run(name, func(t *testing.T) {
			deep := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"list": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &leaf}}}}}}
			if q, _, _ := quickSchemaOf(t, deep); q != nil {
				t.Fatalf("newQuickSchema took a schema with %s", name)
			}
		})
	}
}

// TestQuickSchemaRandom checks the quick check against kube-openapi's validator on random
// schemas of the kinds it takes (with, now and then, a keyword it must decline) and random
// objects, mostly of the schema's shape but with wrong types, nulls, floats and missing
// required keys mixed in: whatever it passes, kube-openapi passes, on a create and on a
// ratcheted update. It must also pass a good share, or the check would be dead code.
func TestQuickSchemaRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var simple, passed, declined, found int
	const n = 3000
	for range n {
		complexKeyword := false
		s := randomSchema(r, 0, &complexKeyword)
		q, validator, _ := quickSchemaOf(t, s)
		if (q != nil) == complexKeyword {
			schemaJSON, _ := json.Marshal(s)
			t.Fatalf("newQuickSchema took it: %v, with a keyword it must decline: %v\n%s", q != nil, complexKeyword, schemaJSON)
		}
		if q != nil {
			simple++
		}
		for range 4 {
			obj, _ := randomValue(r, s, 0).(map[string]any)
			if obj == nil {
				obj = map[string]any{}
			}
			old, _ := randomValue(r, s, 0).(map[string]any)
			if checkQuickAgrees(t, q, validator, s, obj, old) {
				passed++
			} else if q != nil {
				declined++
				if len(apiservervalidation.ValidateCustomResource(nil, obj, validator)) > 0 {
					found++
				}
			}
		}
	}
	t.Logf("%d schemas, %d taken; objects passed %d, declined %d (kube-openapi found errors in %d)", n, simple, passed, declined, found)
	if simple < n/2 || passed < n/2 || found < n/2 {
		t.Fatalf("the random cases do not exercise the check: %d schemas taken, %d objects passed, %d errors found", simple, passed, found)
	}
}

// randomSchema makes a schema of types (or none), properties, additional properties,
// items, required keys, nullable and x-kubernetes-preserve-unknown-fields; one node in about
// thirty gets a keyword newQuickSchema must decline, and *complexKeyword says so.
func randomSchema(r *rand.Rand, depth int, complexKeyword *bool) *apiextensionsv1.JSONSchemaProps {
	types := []string{"string", "integer", "number", "boolean", "", "object", "array"}
	if depth >= 3 {
		types = types[:5]
	}
	s := &apiextensionsv1.JSONSchemaProps{Type: types[r.IntN(len(types))], Nullable: r.IntN(5) == 0}
	switch s.Type {
	case "": // any value: structural schemas allow no type only so
		s.XPreserveUnknownFields = ptr.To(true)
	case "object":
		switch r.IntN(4) {
		case 0:
			s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: randomSchema(r, depth+1, complexKeyword)}
		case 1:
			s.XPreserveUnknownFields = ptr.To(true)
		default:
			s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			for i := range 1 + r.IntN(4) {
				name := fmt.Sprintf("p%d", i)
				s.Properties[name] = *randomSchema(r, depth+1, complexKeyword)
				if r.IntN(3) == 0 {
					s.Required = append(s.Required, name)
				}
			}
		}
	case "array":
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: randomSchema(r, depth+1, complexKeyword)}
	}
	if r.IntN(30) == 0 {
		*complexKeyword = true
		one := int64(1)
		switch s.Type {
		case "", "string":
			s.MaxLength = &one
		case "integer", "number":
			m := 2.0
			s.Maximum = &m
		case "boolean":
			s.Enum = []apiextensionsv1.JSON{{Raw: []byte(`true`)}}
		case "object":
			s.MaxProperties = &one
		case "array":
			s.MaxItems = &one
		}
	}
	return s
}

// randomValue makes a value for s: of its shape 24 times in 25, otherwise a null, a
// float, or a value of another type; objects drop a required key now and then.
func randomValue(r *rand.Rand, s *apiextensionsv1.JSONSchemaProps, depth int) any {
	if depth > 6 {
		return nil
	}
	if r.IntN(25) == 0 {
		others := []any{nil, 1.0, 2.5, int64(-3), "s", true, []any{}, map[string]any{}}
		return others[r.IntN(len(others))]
	}
	if s == nil {
		return "x"
	}
	switch s.Type {
	case "":
		anything := []any{"s", int64(2), 0.5, false, []any{"x", int64(1)}, map[string]any{"a": []any{}}}
		return anything[r.IntN(len(anything))]
	case "string":
		return fmt.Sprintf("v%d", r.IntN(100))
	case "integer":
		return int64(r.IntN(10))
	case "number":
		if r.IntN(2) == 0 {
			return int64(r.IntN(10))
		}
		return r.Float64() * 4
	case "boolean":
		return r.IntN(2) == 0
	case "array":
		var l []any
		for range r.IntN(4) {
			l = append(l, randomValue(r, s.Items.Schema, depth+1))
		}
		if l == nil {
			l = []any{}
		}
		return l
	}
	m := map[string]any{}
	switch {
	case s.AdditionalProperties != nil:
		for i := range r.IntN(3) {
			m[fmt.Sprintf("k%d", i)] = randomValue(r, s.AdditionalProperties.Schema, depth+1)
		}
	case s.XPreserveUnknownFields != nil:
		m["free"] = map[string]any{"x": []any{int64(1), "y", nil}}
	default:
		for name, p := range s.Properties {
			if r.IntN(8) != 0 {
				m[name] = randomValue(r, &p, depth+1)
			}
		}
		if r.IntN(4) == 0 {
			m["unknown"] = int64(1) // what pruning would remove; kube-openapi lets it be
		}
	}
	return m
}

// TestQuickSchemaUsedByKind: a custom kind whose schema is simple validates a create
// through the quick check (no error for a good object) and still gets kube-openapi's errors
// for a bad one; a ratcheted update likewise.
func TestQuickSchemaUsedByKind(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
"names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,
"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}}}}]}}`), crd); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	k, err := customKind(crd, crd.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	good := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"n": int64(1)}}}
	bad := good.DeepCopy()
	bad.Object["spec"] = map[string]any{"n": "one"}
	if errs := k.Strategy.ValidateNew(good); len(errs) > 0 {
		t.Fatalf("good create: %v", errs)
	}
	if errs := k.Strategy.ValidateUpdate(good, good.DeepCopy()); len(errs) > 0 {
		t.Fatalf("good update: %v", errs)
	}
	for _, errs := range [][]error{toErrors(k.Strategy.ValidateNew(bad)), toErrors(k.Strategy.ValidateUpdate(bad, good))} {
		if len(errs) != 1 || errs[0].Error() != `spec.n: Invalid value: "string": spec.n in body must be of type integer: "string"` {
			t.Fatalf("bad object: %v", errs)
		}
	}
	// A ratcheted update keeps an invalid value that did not change.
	if errs := k.Strategy.ValidateUpdate(bad, bad.DeepCopy()); len(errs) > 0 {
		t.Fatalf("unchanged invalid value ratcheted: %v", errs)
	}
}

func toErrors[E error](errs []E) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}
