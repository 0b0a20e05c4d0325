package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a hand-written function (a test included) may
// be, from its first line to its closing brace.
const maxFuncLines = 120

// TestNoLongFunctions: no hand-written function of the repository, tests
// and func literals included, is longer than maxFuncLines; generated files
// (a "Code generated ... DO NOT EDIT." line) are left out.
func TestNoLongFunctions(t *testing.T) {
	const root = "../.."
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "a func literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body != nil {
				start := fset.Position(n.Pos())
				if lines := fset.Position(body.Rbrace).Line - start.Line + 1; lines > maxFuncLines {
					rel, _ := filepath.Rel(root, start.Filename)
					t.Errorf("%s:%d: %s is %d lines, more than %d", rel, start.Line, name, lines, maxFuncLines)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 300 {
		t.Fatalf("read %d Go files, want the whole repository", files)
	}
}

// TestInternalIsGround: the packages under internal/ are the leaves, below
// every package that uses them: they import nothing of the module outside
// internal/ (the applications live in cmd/internal).
func TestInternalIsGround(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../internal/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/sluicehq/sluice/"
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		n++
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, mod) && !strings.HasPrefix(imp, mod+"internal/") {
				t.Errorf("%s imports %s, a package above internal/", f[0], imp)
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list named %d packages under internal/", n)
	}
}
