package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestIsTerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, w := range map[string]*os.File{"a regular file": file, "a pipe": w} {
		if IsTerminal(w) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is taken for a terminal")
	}
	// /dev/null is a character device, as a terminal is: the one kind of
	// file IsTerminal tells apart, and the one a test can open anywhere.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no %s: %v", os.DevNull, err)
	}
	defer null.Close()
	if !IsTerminal(null) {
		t.Errorf("%s, a character device, is not taken for one", os.DevNull)
	}
}
