package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestARCHITECTUREPaths checks that every path of the repository that
// ARCHITECTURE.md names (a folder or file under one of the top-level
// folders, in prose, tables or diagrams; a pattern such as proxy/streams*.go
// must match something) exists, as TestREADMELayout does for the README's
// layout table.
func TestARCHITECTUREPaths(t *testing.T) {
	const root = "../.."
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths := architecturePaths(string(doc))
	if len(paths) < 30 {
		t.Fatalf("ARCHITECTURE.md names %d paths, want the whole map", len(paths))
	}
	for _, p := range paths {
		matches, err := filepath.Glob(filepath.Join(root, p))
		if err != nil || len(matches) == 0 {
			t.Errorf("ARCHITECTURE.md names %s, which does not exist", p)
		}
	}
}

// pathRE is a path under a top-level folder of the repository: it starts
// after a space, an opening bracket or quote, or at a line's start, and
// ends before what cannot end a path (a possessive 's, punctuation).
var pathRE = regexp.MustCompile("(?m)(?:^|[\\s(`\"'])((?:cmd|adaptive|limits|probe|admin|configs|gate|proxy|internal|permit|client|rls|testdata|deploy|\\.ci)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*])")

// architecturePaths returns the paths doc names, each once, in order; a
// template (adaptive/<name>.go) is not a path.
func architecturePaths(doc string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range pathRE.FindAllStringSubmatchIndex(doc, -1) {
		p := doc[m[2]:m[3]]
		if end := m[3]; end < len(doc) && doc[end] == '<' {
			continue
		}
		p = strings.TrimSuffix(p, ".")
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// The check reads a path wherever it stands, and not what only looks like
// one.
func TestArchitecturePathsRead(t *testing.T) {
	got := architecturePaths("the gate (`gate/spec`'s types), proxy/h1/request.go, gate/redisrate: x;\n" +
		"`proxy/streams*.go` and (limits/redis/lua) but not adaptive/<name>.go or gate.Config or ./gate")
	want := []string{"gate/spec", "proxy/h1/request.go", "gate/redisrate", "proxy/streams*.go", "limits/redis/lua"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths %q, want %q", got, want)
	}
}

// TestARCHITECTUREImports checks the package table's last column against
// the code: the packages of sluice's that each row names are those its
// package imports (with its sub-packages that have no row of their own,
// commands left out; an import of such a sub-package counts as one of its
// parent's row), no more and no fewer. A row whose column says
// "everything", or a row of several packages (internal/*), is not checked.
func TestARCHITECTUREImports(t *testing.T) {
	const mod = "github.com/sluicehq/sluice/"
	doc, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Name}} {{join .Imports " "}}`, "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	type pkg struct {
		main    bool
		imports []string
	}
	pkgs := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p := pkg{main: f[1] == "main"}
		for _, imp := range f[2:] {
			if strings.HasPrefix(imp, mod) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, mod))
			}
		}
		pkgs[strings.TrimPrefix(f[0], mod)] = p
	}
	rowRE := regexp.MustCompile("(?m)^\\| `([a-z][a-z0-9/]*)` \\| .* \\| (.*) \\|$")
	rows := rowRE.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 25 {
		t.Fatalf("the package table has %d rows, want the whole tree", len(rows))
	}
	hasRow := map[string]bool{}
	for _, r := range rows {
		hasRow[r[1]] = true
	}
	// rowOf is the row a package is told in: its own, else its nearest
	// parent's; a package under no row stands for itself.
	rowOf := func(p string) string {
		for q := p; q != "."; q = filepath.Dir(q) {
			if hasRow[q] {
				return q
			}
		}
		return p
	}
	named := regexp.MustCompile("`([a-z][a-z0-9/]*)`")
	for _, r := range rows {
		name, col := r[1], r[2]
		if col == "everything" {
			continue
		}
		if _, ok := pkgs[name]; !ok {
			t.Errorf("ARCHITECTURE.md has a row for %s, which is not a package", name)
			continue
		}
		want := map[string]bool{}
		for p, q := range pkgs {
			if rowOf(p) != name || q.main && p != name {
				continue
			}
			for _, imp := range q.imports {
				if r := rowOf(imp); r != name {
					want[r] = true
				}
			}
		}
		got := map[string]bool{}
		for _, m := range named.FindAllStringSubmatch(col, -1) {
			if _, ok := pkgs[m[1]]; ok {
				got[rowOf(m[1])] = true
			}
		}
		for imp := range want {
			if !got[imp] {
				t.Errorf("ARCHITECTURE.md: %s imports %s, which its row does not name", name, imp)
			}
		}
		for imp := range got {
			if !want[imp] {
				t.Errorf("ARCHITECTURE.md: %s's row names %s, which it does not import", name, imp)
			}
		}
	}
}
