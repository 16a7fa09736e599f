package matchconditions

import (
	"context"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestMatch(t *testing.T) {
	in := Input{Object: map[string]any{"metadata": map[string]any{"name": "a"}}, Request: map[string]any{"operation": "CREATE"}}
	for _, tc := range []struct {
		name    string
		exprs   []string
		want    bool
		wantErr string
	}{
		{"all true", []string{`object.metadata.name == "a"`, `request.operation == "CREATE"`}, true, ""},
		{"one false", []string{`object.metadata.name == "a"`, `oldObject != null`}, false, ""},
		{"false wins over an error", []string{`object.spec.x == 1`, `false`}, false, ""},
		{"error", []string{`object.spec.x == 1`, `true`}, false, `expression 'object.spec.x == 1' resulted in error: no such key: spec`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conds []admissionregv1.MatchCondition
			for _, e := range tc.exprs {
				conds = append(conds, admissionregv1.MatchCondition{Name: "c", Expression: e})
			}
			got, err := Match(context.Background(), Compile(conds), in)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("got %v, %v; want %v, %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	errs := Validate([]admissionregv1.MatchCondition{{Name: "", Expression: " "}, {Name: "bad name!", Expression: "true"}}, field.NewPath("m"))
	want := []string{"m[0].expression: Required value", "m[0].name: Required value", `m[1].name: Invalid value: "bad name!"`}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i, w := range want {
		if got := errs[i].Error(); len(got) < len(w) || got[:len(w)] != w {
			t.Errorf("error %d: %q, want prefix %q", i, got, w)
		}
	}
}
