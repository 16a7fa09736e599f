package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// kubectlTests returns, per package directory under root (relative, slash-separated), the
// names of the Test functions that run kubectl: those that reach testenv.Kubectl, directly or
// through the functions and methods of their own directory. Names are matched, not types:
// a method named like one that reaches kubectl counts too, which errs towards running a test.
func kubectlTests(root string) (map[string][]string, error) {
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		tests, err := dirKubectlTests(path)
		if err != nil || len(tests) == 0 {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		found[filepath.ToSlash(rel)] = tests
		return nil
	})
	return found, err
}

// dirKubectlTests is kubectlTests for the Go files of one directory.
func dirKubectlTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	refs := map[string]map[string]bool{} // function key -> the keys its body names
	reaches := map[string]bool{}         // function key -> it names testenv.Kubectl itself
	var tests []string
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			key := funcKey(fn)
			if refs[key] == nil {
				refs[key] = map[string]bool{}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "testenv" && n.Sel.Name == "Kubectl" {
						reaches[key] = true
					}
					refs[key]["."+n.Sel.Name] = true
				case *ast.Ident:
					refs[key][n.Name] = true
				}
				return true
			})
			if fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" && strings.HasSuffix(f, "_test.go") {
				tests = append(tests, fn.Name.Name)
			}
		}
	}
	for changed := true; changed; { // until no function newly reaches kubectl
		changed = false
		for key, names := range refs {
			if reaches[key] {
				continue
			}
			for name := range names {
				if reaches[name] {
					reaches[key], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, name := range tests {
		if reaches[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// funcKey names a function as the bodies that call it do: "f" for a function, ".m" for a
// method (called as x.m).
func funcKey(fn *ast.FuncDecl) string {
	if fn.Recv != nil {
		return "." + fn.Name.Name
	}
	return fn.Name.Name
}

// repoRoot is the directory of hacp's go.mod at or above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/hacp/hacp\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", os.ErrNotExist
		}
	}
}
