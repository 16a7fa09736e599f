package server

import (
	"fmt"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/openapi"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// typeConverters caches the structured-merge-diff schemas of kinds: a built-in kind by
// its GroupVersionKind, a custom resource's by its definition (a new one per change).
var typeConverters sync.Map // typeConverterKey -> *typeConverterResult

type typeConverterKey struct {
	gvk schema.GroupVersionKind
	def *registry.Kind // nil for a built-in kind
}

type typeConverterResult struct {
	once sync.Once
	tc   managedfields.TypeConverter
	err  error
}

// typeConverter is the schema of gvk as the OpenAPI v3 models publish it (a custom
// resource's from its openAPIV3Schema), for MutatingAdmissionPolicy's ApplyConfiguration,
// as kube-apiserver builds it from its OpenAPI v3 documents.
func (s *Server) typeConverter(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	key := typeConverterKey{gvk: gvk}
	if !registry.Scheme.Recognizes(gvk) {
		key.def = s.customKind(gvk)
		if key.def == nil {
			return nil, fmt.Errorf("no schema for %v", gvk)
		}
	}
	v, _ := typeConverters.LoadOrStore(key, &typeConverterResult{})
	r := v.(*typeConverterResult)
	r.once.Do(func() { r.tc, r.err = newTypeConverter(key) })
	return r.tc, r.err
}

// customKind is the served custom resource version of gvk, nil when none is.
func (s *Server) customKind(gvk schema.GroupVersionKind) *registry.Kind {
	for _, res := range s.registry.CustomResources() {
		def := res.Store.Definition()
		versions := def.Versions
		if len(versions) == 0 {
			versions = []*registry.Kind{def}
		}
		for _, v := range versions {
			if v != nil && v.GVK() == gvk {
				return v
			}
		}
	}
	return nil
}

func newTypeConverter(key typeConverterKey) (managedfields.TypeConverter, error) {
	if key.def != nil {
		models, err := openapi.Models(&unstructured.Unstructured{}, key.gvk, key.def.OpenAPISchema)
		if err != nil {
			return nil, err
		}
		return managedfields.NewTypeConverter(models, key.def.OpenAPISchema == nil)
	}
	obj, err := registry.Scheme.New(key.gvk)
	if err != nil {
		return nil, err
	}
	models, err := openapi.Models(obj, key.gvk, nil)
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(models, false)
}
