package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// mergeExtensions is what kube-apiserver's OpenAPI definitions say of the k8s.io/api types'
// list and map types: the list types, list-map keys and map types come from Go comments
// (+listType=map, +listMapKey, +structType=atomic) that reflection cannot see. client-go's
// apply configurations carry the schema generated from those very definitions; reading it
// costs about 0.4 s of CPU (a large YAML document), so what the documents need of it is
// kept in zz_generated_mergeext.go, written from it by
// `go test ./pkg/apiserver/openapi -run TestMergeExtensionsTable -update-mergeext`, and
// TestMergeExtensionsTable fails when the two differ (after a k8s.io/client-go update).
var mergeExtensions = sync.OnceValues(generatedMergeExtensions)

// fieldMergeExtensions returns the x-kubernetes-list-type, x-kubernetes-list-map-keys and
// x-kubernetes-map-type extensions and the default upstream's definition typeName writes
// on its property field, if any.
func fieldMergeExtensions(typeName, field string) map[string]any {
	fields, _ := mergeExtensions()
	ext, ok := fields[[2]string{typeName, field}]
	if !ok {
		return nil
	}
	return jsonValue(ext).(map[string]any) // a copy: the documents own their values
}

// typeMergeExtensions returns the x-kubernetes-map-type upstream writes on definition
// typeName (structs marked +structType=atomic).
func typeMergeExtensions(typeName string) map[string]any {
	if _, atomic := mergeExtensions(); atomic[typeName] {
		return map[string]any{"x-kubernetes-map-type": "atomic"}
	}
	return nil
}

// Models returns the OpenAPI v3 schemas of one kind as its v3 document publishes them: the
// kind's definition and every definition it reaches, by name. custom is a custom resource's
// structural schema (with an unstructured obj). They are what
// k8s.io/apimachinery/pkg/util/managedfields.NewTypeConverter takes, as kube-apiserver
// builds its field managers from its OpenAPI models.
func Models(obj runtime.Object, gvk runtimeschema.GroupVersionKind, custom map[string]any) (map[string]*spec.Schema, error) {
	g := newGenerator(true)
	objectSchema(obj, gvk, "", false, custom)(g)
	defs := g.finish()
	data, err := json.Marshal(defs)
	if err != nil {
		return nil, fmt.Errorf("openapi: models of %s: %w", gvk, err)
	}
	out := map[string]*spec.Schema{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("openapi: models of %s: %w", gvk, err)
	}
	return out, nil
}

// setExtensions merges ext into a property schema (wrapping a v3 $ref in allOf first).
func (g *generator) setExtensions(s object, ext map[string]any) object {
	if len(ext) == 0 {
		return s
	}
	if _, isRef := s["$ref"]; isRef && g.v3 {
		s = object{"allOf": []any{s}}
	}
	maps.Copy(s, ext)
	return s
}

// jsonValue turns a value decoded from YAML (maps keyed by any) into one encoding/json takes.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	}
	return v
}
