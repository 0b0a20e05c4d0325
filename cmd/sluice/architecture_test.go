package main

import (
	"os"
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
