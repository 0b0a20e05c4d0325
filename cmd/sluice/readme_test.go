package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMELayout checks that every path the README's layout table names,
// and every relative link of the README, exists in the repository.
func TestREADMELayout(t *testing.T) {
	const root = "../.."
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Layout")
	if start < 0 {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	layout := text[start:]
	if end := strings.Index(layout[1:], "\n## "); end >= 0 {
		layout = layout[:end+1]
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	rows := row.FindAllStringSubmatch(layout, -1)
	if len(rows) < 10 {
		t.Fatalf("the layout table has %d rows, want the whole tree", len(rows))
	}
	for _, m := range rows {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("layout row %q: %v", m[1], err)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, m := range link.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("link %q: %v", m[1], err)
		}
	}
}
