package openapi

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// object is one JSON object of the document under construction. Plain maps
// keep the output exactly what we write; the tests parse it back with
// kube-openapi's types.
type object = map[string]any

// generator turns Go types into schemas for one document. v2 and each v3
// group-version document get their own generator, so a v3 document holds
// exactly the definitions its paths reach, as upstream's do.
type generator struct {
	v3 bool
	// defs are the definitions written so far, by name.
	defs map[string]object
	// gvks lists the x-kubernetes-group-version-kind entries per definition.
	gvks map[string][]schema.GroupVersionKind
}

func newGenerator(v3 bool) *generator {
	return &generator{v3: v3, defs: map[string]object{}, gvks: map[string][]schema.GroupVersionKind{}}
}

// ref returns a reference to definition name.
func (g *generator) ref(name string) object {
	if g.v3 {
		return object{"$ref": "#/components/schemas/" + name}
	}
	return object{"$ref": "#/definitions/" + name}
}

// withDoc attaches a description to a field schema. A v3 $ref may not have
// siblings, so upstream wraps it in allOf; v2 tolerates them.
func (g *generator) withDoc(s object, doc string) object {
	if doc == "" {
		return s
	}
	if _, isRef := s["$ref"]; isRef && g.v3 {
		return object{"allOf": []any{s}, "description": doc}
	}
	s["description"] = doc
	return s
}

// addGVK records that definition name is the schema of gvk.
func (g *generator) addGVK(name string, gvk schema.GroupVersionKind) {
	if !slices.Contains(g.gvks[name], gvk) {
		g.gvks[name] = append(g.gvks[name], gvk)
	}
}

// finish writes the x-kubernetes-group-version-kind extensions and returns
// the definitions.
func (g *generator) finish() map[string]object {
	for name, gvks := range g.gvks {
		def, ok := g.defs[name]
		if !ok {
			continue
		}
		slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int {
			return strings.Compare(a.String(), b.String())
		})
		list := make([]any, 0, len(gvks))
		for _, gvk := range gvks {
			list = append(list, gvkObject(gvk))
		}
		def["x-kubernetes-group-version-kind"] = list
	}
	return g.defs
}

func gvkObject(gvk schema.GroupVersionKind) object {
	return object{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// Types with a hand-written schema in upstream (OpenAPIDefinitionGetter or
// OpenAPISchemaType methods). Their definitions keep upstream's names.
type schemaTyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

type oneOfTyper interface {
	OpenAPIV3OneOfTypes() []string
}

type swaggerDoccer interface {
	SwaggerDoc() map[string]string
}

// typeDocs are descriptions for types whose package has no SwaggerDoc for
// them (upstream takes them from Go comments).
var typeDocs = map[string]string{
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":  "MicroTime is version of Time with microsecond level precision.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Duration":   "Duration is a wrapper around time.Duration which supports correct marshaling to YAML and JSON. In particular, it marshals into strings, which can be used as map keys in json.",
	"io.k8s.apimachinery.pkg.api.resource.Quantity":   "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= <signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> ```",
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.",
	"io.k8s.apimachinery.pkg.runtime.RawExtension":    "RawExtension is used to hold extensions in external versions.\n\nTo use this, make a field which has RawExtension as its type in your external, versioned struct, and Object in your internal struct. You also need to register your various plugin types.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Patch":      "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
}

// definitionName is upstream's name for a Go type: the package path with
// its domain reversed, then the type name ("k8s.io/api/core/v1".Pod ->
// "io.k8s.api.core.v1.Pod"), or the name the type gives itself.
func definitionName(t reflect.Type) string {
	if n, ok := reflect.Zero(t).Interface().(interface{ OpenAPIModelName() string }); ok {
		return n.OpenAPIModelName() // types defined here for an upstream API (APIService)
	}
	pkg := t.PkgPath()
	domain, rest, _ := strings.Cut(pkg, "/")
	parts := strings.Split(domain, ".")
	slices.Reverse(parts)
	name := strings.Join(parts, ".")
	if rest != "" {
		name += "." + strings.ReplaceAll(rest, "/", ".")
	}
	return name + "." + t.Name()
}

// groupDefinitionName names a kind without a Go type (a custom resource) the
// way upstream names CRD schemas: reversed group, version, kind.
func groupDefinitionName(gvk schema.GroupVersionKind) string {
	parts := strings.Split(gvk.Group, ".")
	slices.Reverse(parts)
	prefix := strings.Join(parts, ".")
	if prefix != "" {
		prefix += "."
	}
	return prefix + gvk.Version + "." + gvk.Kind
}

// schemaFor returns the schema of a value of type t: a $ref for structs and
// special named types (defining them on first use), an inline schema for
// everything else.
func (g *generator) schemaFor(t reflect.Type) object {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() != "" && t.PkgPath() != "" {
		z := reflect.Zero(t).Interface()
		if _, ok := z.(schemaTyper); ok {
			return g.ref(g.define(t))
		}
		if t.Kind() == reflect.Struct {
			return g.ref(g.define(t))
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return object{"type": "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return object{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return object{"type": "integer", "format": "int64"}
	case reflect.Float32:
		return object{"type": "number", "format": "float"}
	case reflect.Float64:
		return object{"type": "number", "format": "double"}
	case reflect.String:
		return object{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return object{"type": "string", "format": "byte"}
		}
		return object{"type": "array", "items": g.schemaFor(t.Elem())}
	case reflect.Map:
		return object{"type": "object", "additionalProperties": g.schemaFor(t.Elem())}
	case reflect.Struct:
		// An anonymous struct: inline its properties.
		return g.structSchema(t)
	default:
		// interface{} and runtime.Object fields carry arbitrary JSON.
		return object{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
}

// define writes the definition of named type t (once) and returns its name.
func (g *generator) define(t reflect.Type) string {
	name := definitionName(t)
	if _, done := g.defs[name]; done {
		return name
	}
	g.defs[name] = object{} // placeholder: breaks cycles
	var def object
	z := reflect.Zero(t).Interface()
	if st, ok := z.(schemaTyper); ok {
		def = object{}
		if oneOf, ok := z.(oneOfTyper); ok && g.v3 {
			var alts []any
			for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
				alts = append(alts, object{"type": typ})
			}
			def["oneOf"] = alts
		} else if types := st.OpenAPISchemaType(); len(types) == 1 {
			def["type"] = types[0]
		}
		if f := st.OpenAPISchemaFormat(); f != "" {
			def["format"] = f
		}
		if f := st.OpenAPISchemaFormat(); f == "int-or-string" {
			def["x-kubernetes-int-or-string"] = true
		}
	} else {
		def = g.structSchema(t)
		for k, v := range typeMergeExtensions(name) {
			def[k] = v
		}
	}
	doc := typeDocs[name]
	if d, ok := z.(swaggerDoccer); ok && d.SwaggerDoc()[""] != "" {
		doc = d.SwaggerDoc()[""]
	}
	if doc != "" {
		def["description"] = doc
	}
	g.defs[name] = def
	return name
}

// structSchema is the object schema of struct type t: one property per JSON
// field, embedded inline structs flattened, descriptions from SwaggerDoc,
// strategic merge patch metadata from struct tags.
func (g *generator) structSchema(t reflect.Type) object {
	props := object{}
	g.addFields(props, t)
	s := object{"type": "object"}
	if len(props) > 0 {
		s["properties"] = props
	}
	return s
}

func (g *generator) addFields(props object, t reflect.Type) {
	typeName := ""
	if t.Name() != "" && t.PkgPath() != "" {
		typeName = definitionName(t)
	}
	var docs map[string]string
	if d, ok := reflect.Zero(t).Interface().(swaggerDoccer); ok {
		docs = d.SwaggerDoc()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			// encoding/json inlines untagged embedded structs (TypeMeta,
			// ObjectMeta in some helpers) and so do we.
			g.addFields(props, ft)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := g.schemaFor(f.Type)
		if ms := f.Tag.Get("patchMergeKey"); ms != "" {
			s = g.withExt(s, "x-kubernetes-patch-merge-key", ms)
		}
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			s = g.withExt(s, "x-kubernetes-patch-strategy", ps)
		}
		if typeName != "" {
			s = g.setExtensions(s, fieldMergeExtensions(typeName, name))
		}
		props[name] = g.withDoc(s, docs[name])
	}
}

// withExt sets an extension on a property. In v3 a $ref cannot carry
// siblings, so it is wrapped in allOf first (the strategic merge lookup
// follows allOf); v2 readers take siblings of $ref.
func (g *generator) withExt(s object, key, value string) object {
	if _, isRef := s["$ref"]; isRef && g.v3 {
		s = object{"allOf": []any{s}}
	}
	s[key] = value
	return s
}

// unstructuredSchemas defines a custom kind and its list whose content is
// not known: metadata is typed, everything else is preserved as sent.
//
// custom, when set, is the kind's structural schema (a CRD's
// openAPIV3Schema as decoded JSON). v3 documents publish it with typed
// apiVersion, kind and metadata; v2 keeps the preserve-unknown-fields form,
// since v2 cannot express all of OpenAPI v3's keywords.
func (g *generator) unstructuredSchemas(gvk schema.GroupVersionKind, listKind string, custom map[string]any) (item, list string) {
	item = groupDefinitionName(gvk)
	if _, done := g.defs[item]; !done {
		meta := g.schemaFor(reflect.TypeFor[metav1.ObjectMeta]())
		typeProps := object{
			"apiVersion": object{"type": "string", "description": metav1.TypeMeta{}.SwaggerDoc()["apiVersion"]},
			"kind":       object{"type": "string", "description": metav1.TypeMeta{}.SwaggerDoc()["kind"]},
			"metadata":   g.withDoc(meta, "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
		}
		if custom != nil && g.v3 {
			def := deepCopyJSON(custom).(map[string]any)
			props, _ := def["properties"].(map[string]any)
			if props == nil {
				props = object{}
			}
			maps.Copy(props, typeProps)
			def["properties"] = props
			def["type"] = "object"
			g.defs[item] = def
		} else {
			g.defs[item] = object{
				"type":                                 "object",
				"properties":                           typeProps,
				"x-kubernetes-preserve-unknown-fields": true,
			}
		}
	}
	g.addGVK(item, gvk)
	if listKind == "" {
		return item, ""
	}
	lgvk := gvk.GroupVersion().WithKind(listKind)
	list = groupDefinitionName(lgvk)
	if _, done := g.defs[list]; !done {
		lm := g.schemaFor(reflect.TypeFor[metav1.ListMeta]())
		g.defs[list] = object{
			"description": listKind + " is a list of " + gvk.Kind,
			"type":        "object",
			"required":    []any{"items"},
			"properties": object{
				"apiVersion": object{"type": "string", "description": metav1.TypeMeta{}.SwaggerDoc()["apiVersion"]},
				"kind":       object{"type": "string", "description": metav1.TypeMeta{}.SwaggerDoc()["kind"]},
				"metadata":   g.withDoc(lm, "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
				"items":      object{"type": "array", "items": g.ref(item), "description": "List of " + strings.ToLower(gvk.Kind) + "s."},
			},
		}
	}
	g.addGVK(list, lgvk)
	return item, list
}

// deepCopyJSON copies a decoded JSON value so the caller's schema is never
// shared with (or changed by) a document.
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}
