package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// upstreamTypes is the structured-merge-diff schema of the k8s.io/api types as kube-apiserver's
// OpenAPI definitions give it. The list types, list-map keys and map types come from Go
// comments (+listType=map, +listMapKey, +structType=atomic) that reflection cannot see;
// client-go's apply configurations carry the schema generated from those very definitions,
// so the documents take them from there.
var upstreamTypes = sync.OnceValue(func() *smdschema.Schema {
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	tv, err := tc.ObjectToTyped(pod)
	if err != nil {
		return &smdschema.Schema{}
	}
	return tv.Schema()
})

// Warm loads upstream's list and map types ahead of the first document (reading client-go's
// schema takes a fraction of a second): call it in the background while start-up does
// other work.
func Warm() { upstreamTypes() }

// fieldMergeExtensions returns the x-kubernetes-list-type, x-kubernetes-list-map-keys and
// x-kubernetes-map-type extensions and the default upstream's definition typeName writes
// on its property field, if any.
func fieldMergeExtensions(typeName, field string) map[string]any {
	s := upstreamTypes()
	def, ok := s.FindNamedType(typeName)
	if !ok || def.Map == nil {
		return nil
	}
	f, ok := def.Map.FindField(field)
	if !ok {
		return nil
	}
	ext := map[string]any{}
	if f.Default != nil {
		// +default markers: list-map keys left out of an apply take them (a container
		// port's protocol).
		ext["default"] = jsonValue(f.Default)
	}
	if f.Type.ElementRelationship != nil && *f.Type.ElementRelationship == smdschema.Atomic {
		ext["x-kubernetes-map-type"] = "atomic"
	}
	atom := f.Type.Inlined
	if f.Type.NamedType != nil {
		if t, ok := s.FindNamedType(*f.Type.NamedType); ok && t.List != nil {
			atom = t.Atom
		}
	}
	switch {
	case atom.List != nil:
		switch atom.List.ElementRelationship {
		case smdschema.Associative:
			if len(atom.List.Keys) > 0 {
				ext["x-kubernetes-list-type"] = "map"
				keys := make([]any, len(atom.List.Keys))
				for i, k := range atom.List.Keys {
					keys[i] = k
				}
				ext["x-kubernetes-list-map-keys"] = keys
			} else {
				ext["x-kubernetes-list-type"] = "set"
			}
		case smdschema.Atomic:
			ext["x-kubernetes-list-type"] = "atomic"
		}
	case atom.Map != nil && f.Type.NamedType == nil:
		if atom.Map.ElementRelationship == smdschema.Atomic {
			ext["x-kubernetes-map-type"] = "atomic"
		}
	}
	if len(ext) == 0 {
		return nil
	}
	return ext
}

// typeMergeExtensions returns the x-kubernetes-map-type upstream writes on definition
// typeName (structs marked +structType=atomic).
func typeMergeExtensions(typeName string) map[string]any {
	def, ok := upstreamTypes().FindNamedType(typeName)
	if ok && def.Map != nil && def.Map.ElementRelationship == smdschema.Atomic {
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
