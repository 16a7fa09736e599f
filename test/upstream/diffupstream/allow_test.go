package diffupstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"openapi/apis/*/paths", "openapi/apis/apps/paths", true},
		{"openapi/apis/*/paths", "openapi/apis/apps/v1/paths", false},
		{"**/service.*", "create/service.svc-minimal", true},
		{"**/service.*", "create/serviceaccount.sa", false},
		{".object.metadata.managedFields[*].fieldsV1.f:spec.f:ipFamilies", ".object.metadata.managedFields[1].fieldsV1.f:spec.f:ipFamilies", true},
		{"a.b", "axb", false},
	}
	for _, tt := range tests {
		if got := glob(tt.pattern).MatchString(tt.s); got != tt.want {
			t.Errorf("glob(%q) on %q = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// TestAllowList: an entry covers a check only when it covers every difference of it, for
// its versions; bad files are errors that name the entry.
func TestAllowList(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "allow.yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := LoadAllowList(write(`
- id: "create/**"
  paths: [".object.status"]
  versions: [v1.33.13]
  reason: old types
- ids: ["openapi/index", "openapi/api/paths"]
  reason: documents
`))
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Version: "v1.33.13", Checks: []Check{
		{ID: "create/csinode.x", Result: Differs, paths: []string{".object.status"}},
		{ID: "create/pod.y", Result: Differs, paths: []string{".object.status", ".object.spec"}},
		{ID: "openapi/api/paths", Result: Differs, paths: []string{""}},
		{ID: "same/one", Result: Same},
	}}
	r.apply(a)
	failed := r.Failed()
	if len(failed) != 1 || failed[0].ID != "create/pod.y" {
		t.Errorf("failed = %+v, want only create/pod.y", failed)
	}
	if r.Checks[0].Allowed != "old types" || r.Checks[2].Allowed != "documents" {
		t.Errorf("allowed reasons %q, %q", r.Checks[0].Allowed, r.Checks[2].Allowed)
	}
	r2 := &Report{Version: "v1.37.2", Checks: []Check{{ID: "create/csinode.x", Result: Differs, paths: []string{".object.status"}}}}
	r2.apply(a)
	if len(r2.Failed()) != 1 || len(r2.UnusedAllow) != 1 {
		t.Errorf("at another version: failed %d, unused %v; want 1 and the documents entry", len(r2.Failed()), r2.UnusedAllow)
	}
	for name, text := range map[string]string{
		"no reason":    "- id: x\n",
		"no id":        "- reason: y\n",
		"unknown key":  "- id: x\n  reason: y\n  why: z\n",
		"listed twice": "- id: x\n  reason: y\n- id: x\n  reason: z\n",
		"not a list":   "id: x\n",
	} {
		if _, err := LoadAllowList(write(text)); err == nil || !strings.Contains(err.Error(), "allow.yaml") {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}
