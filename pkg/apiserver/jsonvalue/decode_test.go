package jsonvalue

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	kjson "sigs.k8s.io/json"
)

// decodeCases are inputs whose decoding UnmarshalObject must share with the library's,
// value or failure.
var decodeCases = []string{
	`{}`, ` { } `, `null`, ` null `, `{"a":1}`, `{"a":-0,"b":1.0,"c":1e2,"d":-12.5E-3,"e":9223372036854775807,"f":9223372036854775808,"g":-9223372036854775809}`,
	`{"a":1e400}`, `{"a":1e-400}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`,
	`{"a":"\u00e9\ud83d\ude00\ud800\udc00x\ud800\ud800\udfff\udc00\u0041","b":"\"\\\/\b\f\n\r\t"}`,
	`{"a":"\ud800\u00zz"}`, `{"a":"\ud800\"}`, `{"a":"\q"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\xff\xfe\xed\xa0\x80ok\xe2\x82\"}",
	`{"a":[],"b":[1,[2,{}]],"c":{"d":{"e":null}},"f":true,"g":false}`, `{"a":1,"a":{"b":2},"a":[3]}`,
	`{"a":"","b":"","a":"","b":"","c":{"c":"","c":""},"d":{"e":{"f":1,"f":1}},"e":[{"g":1,"g":1}],"h":[[{"i":1,"i":{"j":1,"j":2}}]],"a":{"k.l":1,"k.l":2}}`,
	`{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":1}}`, `{"a":1} x`, `{"a":[1,]}`, `{"a":[1 2]}`, `{1:2}`,
	`[]`, `[1]`, `"x"`, `1`, `true`, `[1,`, `"x`, ``, ` `, `{`, `{"a"`, `{"a":`, `{"a":"b`,
	strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat(`}`, 9999),
	strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000),
	strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
	`{"a":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}`,
	`{"a":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`,
}

func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var want map[string]any
	wantErr := utiljson.Unmarshal(data, &want)
	got, err := UnmarshalObject(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%.200q: UnmarshalObject's error %v, the library's %v", data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%.200q: UnmarshalObject gave %#v, the library %#v", data, got, want)
	}

	var strictWant map[string]any
	strictErrs, err := kjson.UnmarshalStrict(data, &strictWant)
	gotStrict, dups, gotErr := UnmarshalObjectStrict(data)
	if (gotErr != nil) != (err != nil) {
		t.Fatalf("%.200q: UnmarshalObjectStrict's error %v, the library's %v", data, gotErr, err)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(gotStrict, strictWant) {
		t.Fatalf("%.200q: UnmarshalObjectStrict gave %#v, the library %#v", data, gotStrict, strictWant)
	}
	var wantDups []string
	for _, e := range strictErrs {
		wantDups = append(wantDups, e.Error())
	}
	var gotDups []string
	for _, p := range dups {
		gotDups = append(gotDups, "duplicate field "+strconv.Quote(p))
	}
	if !reflect.DeepEqual(gotDups, wantDups) {
		t.Fatalf("%.200q: UnmarshalObjectStrict found %q, the library %q", data, gotDups, wantDups)
	}
}

func TestUnmarshalObject(t *testing.T) {
	for _, c := range decodeCases {
		checkDecode(t, []byte(c))
	}
	data, err := Marshal(benchObject)
	if err != nil {
		t.Fatal(err)
	}
	checkDecode(t, data)
}

// FuzzUnmarshalObject compares UnmarshalObject with the library on any input.
func FuzzUnmarshalObject(f *testing.F) {
	for _, c := range decodeCases {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
	})
}

func BenchmarkUnmarshalObject(b *testing.B) {
	data, err := Marshal(benchObject)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("jsonvalue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = UnmarshalObject(data)
		}
	})
	b.Run("utiljson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			_ = utiljson.Unmarshal(data, &m)
		}
	})
}
