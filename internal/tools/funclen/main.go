// Command funclen fails when a function of the tree is longer than -max lines (100), so that
// long functions are split into named steps as they grow instead of all at once later.
// Generated files (a "Code generated ... DO NOT EDIT." line) and _test.go files are not
// checked, nor the table functions listed in allowed. `make lint` runs it.
//
//	go run ./internal/tools/funclen [-max 100] [dir ...]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// allowed lists the functions that may be longer than -max because they are tables: data
// written as code, one entry a line, that split into pieces would be no easier to read. A key
// is the file's slash path from the module root and the function's name (Type.Method for a
// method). Add a function here only if it is such a table.
var allowed = map[string]string{
	"pkg/apiserver/authz/policy_controllers.go:buildControllerRoles": "the controllers' bootstrap ClusterRoles, one rule a line, as upstream's table",
	"pkg/apiserver/authz/policy.go:bootstrapClusterRoles":            "the bootstrap ClusterRoles, one rule a line, as upstream's table",
	"pkg/apiserver/tableconvert/volumes.go:init":                     "the volume kinds' table columns, one kind a line",
}

// skipDirs are never walked: build output, data, and what is not this module's Go.
var skipDirs = map[string]bool{".git": true, "_output": true, "_data": true, "testdata": true, "vendor": true, "node_modules": true}

// long is a function over the limit.
type long struct {
	pos   token.Position
	name  string // Type.Method for a method
	lines int
}

func main() {
	maxLines := flag.Int("max", 100, "most lines a function may have, from its func keyword to its closing brace")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: funclen [-max N] [dir ...] (default: .)")
		flag.PrintDefaults()
	}
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var found []long
	used := map[string]bool{}
	for _, dir := range dirs {
		f, err := walk(dir, *maxLines, used)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
		found = append(found, f...)
	}
	for _, l := range found {
		fmt.Printf("%s:%d: %s is %d lines (at most %d): split it into named steps\n", l.pos.Filename, l.pos.Line, l.name, l.lines, *maxLines)
	}
	for _, key := range sortedKeys(allowed) {
		if !used[key] && slices.Contains(dirs, ".") {
			fmt.Fprintf(os.Stderr, "funclen: allowed %s is no longer over %d lines (or has moved): update the list in internal/tools/funclen\n", key, *maxLines)
		}
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// walk checks every non-test Go file below dir, marking in used the allowed functions it met
// over the limit.
func walk(dir string, maxLines int, used map[string]bool) ([]long, error) {
	var found []long
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, l := range longFuncs(fset, f, maxLines) {
			key := filepath.ToSlash(filepath.Clean(path)) + ":" + l.name
			if _, ok := allowed[key]; ok {
				used[key] = true
				continue
			}
			found = append(found, l)
		}
		return nil
	})
	return found, err
}

// longFuncs returns the functions of f longer than maxLines; none for a generated file.
func longFuncs(fset *token.FileSet, f *ast.File, maxLines int) []long {
	if ast.IsGenerated(f) {
		return nil
	}
	var out []long
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start := fset.Position(fd.Pos())
		n := fset.Position(fd.End()).Line - start.Line + 1
		if n > maxLines {
			out = append(out, long{pos: start, name: funcName(fd), lines: n})
		}
	}
	return out
}

// funcName is the function's name, Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic type's method: T[K]
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
