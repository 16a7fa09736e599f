package customresources

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// checkSchemaShortcuts checks what customKind does instead of upstream's calls against
// those calls, for one schema and object: defaulting skipped when the schema has no
// default leaves what defaulting would leave, the create validator built once reports
// what a validator built for the call reports, and an object the quick check passes has
// no errors.
func checkSchemaShortcuts(t *testing.T, schema *apiextensionsv1.JSONSchemaProps, obj map[string]any) {
	t.Helper()
	internal, err := internalSchema(schema)
	if err != nil {
		return
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return
	}
	if !hasDefaults(ss) {
		defaulted := runtime.DeepCopyJSON(obj)
		structuraldefaulting.Default(defaulted, ss)
		if !reflect.DeepEqual(defaulted, obj) {
			t.Fatalf("a schema without defaults defaulted %v to %v", obj, defaulted)
		}
	}
	if !hasEmbeddedResources(ss) {
		if errs := schemaobjectmeta.Validate(context.Background(), nil, obj, ss, false); len(errs) > 0 {
			t.Fatalf("a schema without embedded resources: their metadata's validation found %v", errs)
		}
	}
	if !hasListSetsOrMaps(ss) {
		if errs := listtype.ValidateListSetsAndMaps(nil, ss, obj); len(errs) > 0 {
			t.Fatalf("a schema without list sets or maps: their validation found %v", errs)
		}
	}
	validator, openAPISchema, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return
	}
	shared := schemaCreateValidator{validate.NewSchemaValidator(openAPISchema, nil, "", strfmt.Default)}
	// Both walk maps: the errors come in any order.
	sorted := func(errs field.ErrorList) []string {
		s := make([]string, len(errs))
		for i, e := range errs {
			s[i] = e.Error()
		}
		slices.Sort(s)
		return s
	}
	want := sorted(apiservervalidation.ValidateCustomResource(nil, obj, validator))
	if q, ok := newQuickSchema(openAPISchema); ok && q.valid(obj) && len(want) > 0 {
		t.Fatalf("the quick check passed %v, kube-openapi found %v", obj, want)
	}
	for range 2 { // the second call sees whatever the first left behind
		if got := sorted(apiservervalidation.ValidateCustomResource(nil, obj, shared)); !slices.Equal(got, want) {
			t.Fatalf("the shared create validator found %v, a fresh one %v", got, want)
		}
	}
}

const fuzzCRD = `{"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
"names":{"plural":"things","kind":"Thing","shortNames":["th"]},
"versions":[{"name":"v1","served":true,"storage":true,
 "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.sel"}},
 "additionalPrinterColumns":[{"name":"R","type":"integer","jsonPath":".spec.replicas","priority":1}],
 "schema":{"openAPIV3Schema":{"type":"object","properties":{
  "spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.replicas <= 5","message":"too many"}],
   "required":["replicas"],
   "properties":{"replicas":{"type":"integer","default":1,"minimum":0,"multipleOf":1},
    "name":{"type":"string","pattern":"^[a-z]+$","maxLength":10,"default":"x"},
    "mode":{"type":"string","enum":["a","b"]},
    "port":{"x-kubernetes-int-or-string":true},
    "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"},"maxItems":3},
    "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
     "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"n":{"type":"number","nullable":true}}}},
    "extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
    "labels":{"type":"object","additionalProperties":{"type":"string"},"maxProperties":4},
    "embedded":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
    "choice":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}}},
  "status":{"type":"object","properties":{"replicas":{"type":"integer"},"sel":{"type":"string"}}}}}}}]}}`

// FuzzCustomResourceDefinition feeds random definitions through the CRD validation and
// status, and random objects through the custom resource strategy, scale accessor and
// codec built from the valid ones: none may panic.
func FuzzCustomResourceDefinition(f *testing.F) {
	f.Add([]byte(fuzzCRD), []byte(`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"a"},"spec":{"replicas":3,"tags":["a","a"],"unknown":1,"ports":[{"name":"x"},{"name":"x"}]}}`))
	f.Add([]byte(fuzzCRD), []byte(`{"spec":{"replicas":"x","name":"ABC","mode":"c","port":"80","embedded":{"kind":"K"},"choice":{"a":"1","b":"2"}},"status":{"replicas":1.5}}`))
	f.Add([]byte(fuzzCRD), []byte(`{"spec":null,"status":[]}`))
	f.Add([]byte(strings.ReplaceAll(strings.ReplaceAll(fuzzCRD, `"default":1,`, ""), `,"default":"x"`, "")), []byte(`{"spec":{"replicas":null,"name":null,"labels":{"a":null},"ports":[null,{"name":"p","n":null}]}}`))
	f.Add([]byte(`{"metadata":{"name":"x"},"spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"string"}}}]}}`), []byte(`{}`))
	simple := `{"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
 "data":{"type":"object","additionalProperties":{"type":"string"}},
 "spec":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"},"f":{"type":"number","nullable":true},
  "l":{"type":"array","items":{"type":"boolean"}},"any":{"x-kubernetes-preserve-unknown-fields":true}}}}}}}]}}`
	f.Add([]byte(simple), []byte(`{"data":{"a":"b"},"spec":{"n":1,"f":1.5,"l":[true],"any":[1,"x",null]}}`))
	f.Add([]byte(simple), []byte(`{"data":{"a":1},"spec":{"n":1.0,"f":null,"l":[null]}}`))
	f.Add([]byte(`{"spec":{"versions":[{"name":"v1","storage":true,"served":true,"schema":{"openAPIV3Schema":{"properties":{"a":{"allOf":[{"type":"string"}]}}}}}]}}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, crdJSON, objJSON []byte) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(crdJSON, crd); err != nil {
			return
		}
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		errs := validateCRD(crd)
		_ = crdStatus(crd, map[string]*apiextensionsv1.CustomResourceDefinition{crd.Name: crd, "other": crd.DeepCopy()})
		if len(errs) > 0 {
			return
		}
		var content map[string]any
		if err := utiljson.Unmarshal(objJSON, &content); err != nil || content == nil {
			return
		}
		for _, v := range crd.Spec.Versions {
			k, err := customKind(crd, v)
			if err != nil {
				t.Fatalf("a valid definition's version %s: %v", v.Name, err)
			}
			obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(content)}
			old := obj.DeepCopy()
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				checkSchemaShortcuts(t, v.Schema.OpenAPIV3Schema, obj.Object)
			}
			if k.PruneUnknown != nil {
				_ = k.PruneUnknown(obj.Object)
			}
			if k.Strategy.Default != nil {
				k.Strategy.Default(obj)
			}
			if k.Strategy.ValidateNew != nil {
				_ = k.Strategy.ValidateNew(obj)
				_ = k.Strategy.ValidateUpdate(obj, old)
			}
			if k.Scale != nil {
				n := k.Scale.Replicas(obj)
				_ = k.Scale.StatusReplicas(obj)
				_ = k.Scale.Selector(obj)
				k.Scale.SetReplicas(obj, n+1)
			}
			codec := &customResourceCodec{apiVersion: crd.Spec.Group + "/" + v.Name, defaults: k.SchemaDefaults}
			data, err := codec.Encode(obj)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if err := codec.Decode(data, &unstructured.Unstructured{}); err != nil {
				t.Fatalf("decode what encode wrote: %v\n%s", err, data)
			}
			_ = codec.Decode(objJSON, &unstructured.Unstructured{})
		}
	})
}

// TestFuzzCRDSeedValid: the fuzz seed is a valid definition, so the fuzzer reaches the
// custom resource strategy.
func TestFuzzCRDSeedValid(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(fuzzCRD), crd); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	if errs := validateCRD(crd); len(errs) > 0 {
		t.Fatalf("seed invalid: %v", errs)
	}
	k, err := customKind(crd, crd.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(7), "tags": []any{"a", "a"}}}}
	k.Strategy.Default(obj)
	errs := k.Strategy.ValidateNew(obj)
	want := map[string]bool{"spec": false, "spec.tags[1]": false}
	for _, e := range errs {
		if _, ok := want[e.Field]; ok {
			want[e.Field] = true
		}
	}
	for f, seen := range want {
		if !seen {
			t.Errorf("no error at %s in %v", f, errs)
		}
	}
}

// TestCustomResourceCreateValidatorShared validates objects through one kind's create
// validator from several goroutines at once (run with -race): each gets the errors it gets
// alone.
func TestCustomResourceCreateValidatorShared(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(fuzzCRD), crd); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	k, err := customKind(crd, crd.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	objects := []string{
		`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"a"},"spec":{"replicas":3}}`,
		`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"b"},"spec":{"replicas":-1,"name":"ABC","mode":"c","tags":["a","b","c","d"]}}`,
		`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"c"},"spec":{"replicas":9,"choice":{"a":"1","b":"2"},"labels":{"a":"1","b":2}}}`,
	}
	errorsOf := func(i int) string {
		var m map[string]any
		if err := utiljson.Unmarshal([]byte(objects[i]), &m); err != nil {
			t.Error(err)
		}
		var msgs []string
		for _, e := range k.Strategy.ValidateNew(&unstructured.Unstructured{Object: m}) {
			msgs = append(msgs, e.Error())
		}
		slices.Sort(msgs)
		return strings.Join(msgs, "\n")
	}
	want := make([]string, len(objects))
	for i := range objects {
		want[i] = errorsOf(i)
	}
	if want[0] != "" || want[1] == "" || want[2] == "" {
		t.Fatalf("errors alone: %q", want)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 50 {
				i := (g + n) % len(objects)
				if got := errorsOf(i); got != want[i] {
					t.Errorf("object %d: %q at once, %q alone", i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}
