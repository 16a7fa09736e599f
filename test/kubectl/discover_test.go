package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestKubectlTests(t *testing.T) {
	got, err := kubectlTests("testdata/tree")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"TestDirect", "TestThroughClosure", "TestThroughHelpers", "TestThroughMethod"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kubectlTests = %v, want %v", got, want)
	}
}

func TestKubectlTestsBadSource(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package x\n\nfunc TestX(t *testing.T) {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectlTests(dir); err == nil || !strings.Contains(err.Error(), "x_test.go") {
		t.Fatalf("a file that does not parse: %v", err)
	}
}

func TestGoTestArgs(t *testing.T) {
	found := map[string][]string{"pkg/b": {"TestB", "TestShared"}, "pkg/a": {"TestShared", "TestA"}, "pkg/c": {"TestSlow"}}
	pkgs, pattern := goTestArgs(found, map[string]string{"TestSlow": "slow"})
	if want := []string{"./pkg/a", "./pkg/b"}; !reflect.DeepEqual(pkgs, want) {
		t.Errorf("packages = %v, want %v", pkgs, want)
	}
	if want := "^(TestA|TestB|TestShared)$"; pattern != want {
		t.Errorf("pattern = %q, want %q", pattern, want)
	}
}
