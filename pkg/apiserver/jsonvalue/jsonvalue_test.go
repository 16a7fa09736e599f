package jsonvalue

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func TestMarshal(t *testing.T) {
	deep := any("leaf")
	for range maxDepth + 5 {
		deep = []any{deep}
	}
	tests := []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"object", map[string]any{"b": int64(1), "a": "x", "c": []any{true, false, nil, 1.5, int64(-3)}, "": map[string]any{}}},
		{"nil map and slice", map[string]any{"m": map[string]any(nil), "s": []any(nil), "e": []any{}}},
		{"escapes", map[string]any{"html": "<a href=\"x\">&</a>", "ctl": "a\nb\tc\x01\x7f", "uni": "héllo \u2028 \u2029", "bad": "\xff\xfe", "key<&>": "v"}},
		{"floats", []any{0.0, math.Copysign(0, -1), 1e-7, 1e21, 123456789.125, 1e20, 5e-324, math.MaxFloat64}},
		{"ints", []any{int64(math.MinInt64), int64(math.MaxInt64), int64(0)}},
		{"other types", map[string]any{"n": json.Number("12"), "i": 3, "ss": []string{"a"}, "ms": map[string]string{"k": "v"}}},
		{"deep", deep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Marshal(tt.v)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Marshal = %s, %v\nwant %s", got, err, want)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	for _, v := range []any{math.NaN(), map[string]any{"x": []any{math.Inf(1)}}, map[string]any{"c": make(chan int)}} {
		_, want := json.Marshal(v)
		_, got := Marshal(v)
		if got == nil || got.Error() != want.Error() {
			t.Fatalf("Marshal(%v) error %v, want %v", v, got, want)
		}
	}
}

// FuzzMarshal: any JSON document, decoded as the apiserver decodes custom resources
// (int64 where it can, float64 else), encodes as encoding/json encodes it.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1.5,"x",null,true],"c":{"d":"<>&\u2028"}}`, `[]`, `"\u0000"`, `1e400`, `{"z":{},"a":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if utiljson.Unmarshal(data, &v) != nil {
			return
		}
		want, werr := json.Marshal(v)
		got, gerr := Marshal(v)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("Marshal = %s, %v\nwant %s, %v", got, gerr, want, werr)
		}
	})
}

// benchObject is a custom resource as the crd bench rows store it, managedFields and all.
var benchObject = map[string]any{"apiVersion": "bench.example.com/v1", "kind": "BenchObject", "data": map[string]any{"key": "value"},
	"metadata": map[string]any{"name": "j32-00001", "namespace": "crd", "uid": "0b0e2f6c-4b8b-4c4b-9a53-4f6f2a6b0f00",
		"resourceVersion": "12345", "generation": int64(1), "creationTimestamp": "2026-11-26T10:00:00Z",
		"managedFields": []any{map[string]any{"manager": "apiserver", "operation": "Update", "apiVersion": "bench.example.com/v1",
			"time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{".": map[string]any{}, "f:key": map[string]any{}}}}}}}

func BenchmarkMarshal(b *testing.B) {
	b.Run("jsonvalue", func(b *testing.B) {
		for b.Loop() {
			_, _ = Marshal(benchObject)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(benchObject)
		}
	})
}

// Equal agrees with reflect.DeepEqual on pairs of decoded JSON values, also on a value and
// itself changed by one edit.
func FuzzEqual(f *testing.F) {
	for _, s := range [][2]string{{`{"a":1,"b":[1.5,"x",null,true]}`, `{"a":1,"b":[1.5,"x",null,true]}`},
		{`{"a":{}}`, `{"a":[]}`}, {`[1,2]`, `[1,2.5]`}, {`{"a":null}`, `{}`}, {`"x"`, `"y"`}} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var a, b any
		if utiljson.Unmarshal(x, &a) != nil || utiljson.Unmarshal(y, &b) != nil {
			return
		}
		for _, pair := range [][2]any{{a, b}, {a, a}, {b, a}} {
			if got, want := Equal(pair[0], pair[1]), reflect.DeepEqual(pair[0], pair[1]); got != want {
				t.Fatalf("Equal(%#v, %#v) = %v, reflect.DeepEqual %v", pair[0], pair[1], got, want)
			}
		}
	})
}

func TestEqualNilAndEmpty(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{map[string]any(nil), map[string]any{}, false},
		{[]any(nil), []any{}, false},
		{[]any{map[string]any{"f:a": map[string]any{}}}, []any{map[string]any{"f:a": map[string]any{}}}, true},
		{int64(1), float64(1), false},
		{[]string{"x"}, []string{"x"}, true}, // not a JSON value type: reflect.DeepEqual
	} {
		if got := Equal(tc.a, tc.b); got != tc.want || got != reflect.DeepEqual(tc.a, tc.b) {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func BenchmarkEqual(b *testing.B) {
	other, _ := utiljsonRoundTrip(benchObject)
	b.Run("jsonvalue", func(b *testing.B) {
		for b.Loop() {
			_ = Equal(benchObject, other)
		}
	})
	b.Run("reflect", func(b *testing.B) {
		for b.Loop() {
			_ = reflect.DeepEqual(benchObject, other)
		}
	})
}

func utiljsonRoundTrip(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, utiljson.Unmarshal(data, &out)
}
