package registry

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzManagedFieldsForValidation checks validationMeta's managedFields against the
// unstructured object's own: the same entries but for time and fieldsV1, or the
// converter's answer when the fast path declines.
func FuzzManagedFieldsForValidation(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"x.io/v1","time":"2026-11-26T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:key":{}}}},{"manager":"m","operation":"Apply","subresource":"status","fieldsV1":[1,"x"]}]}}`,
		`{"metadata":{"managedFields":[{"manager":"kubectl","operation":"Bogus","fieldsType":"FieldsV2","extra":1}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":"yesterday"}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":5}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":null}]}}`,
		`{"metadata":{"managedFields":[{"manager":7}]}}`,
		`{"metadata":{"managedFields":[{"manager":null,"operation":"Update"}]}}`,
		`{"metadata":{"managedFields":["x",{}]}}`,
		`{"metadata":{"managedFields":{"manager":"m"}}}`,
		`{"metadata":{"managedFields":null}}`,
		`{"metadata":{"managedFields":[]}}`,
		`{"metadata":{"name":"a"}}`,
		`{"metadata":"x"}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		want := u.GetManagedFields()
		for i := range want {
			want[i].Time, want[i].FieldsV1 = nil, nil
		}
		got := forValidation(u).GetManagedFields()
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: validation reads %+v, the object's GetManagedFields %+v", data, got, want)
		}
	})
}
