package configs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "sluice.toml", Line: 14, Path: "group[1].rate.burst", Msg: "must be ≥ cost (5), got 2"}, "sluice.toml:14: group[1].rate.burst: must be ≥ cost (5), got 2"},
		{Error{File: "sluice.toml", Path: "upstream.url", Msg: "required"}, "sluice.toml: upstream.url: required"},
		{Error{Line: 7, Path: "group[0].concurency", Msg: "unknown key"}, "line 7: group[0].concurency: unknown key"},
		{Error{Path: "admin.listen", Msg: "bad"}, "admin.listen: bad"},
		{Error{File: "f.toml", Line: 2, Msg: "invalid TOML: x"}, "f.toml:2: invalid TOML: x"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
	one := Errors{{Path: "a", Msg: "x"}}
	if got := one.Error(); got != "configs: a: x" {
		t.Errorf("one error: %q", got)
	}
	two := Errors{{Line: 3, Path: "a", Msg: "x"}, {Path: "b", Msg: "y"}}
	if got := two.Error(); got != "configs: 2 problems:\n  line 3: a: x\n  b: y" {
		t.Errorf("two errors: %q", got)
	}
}

func TestErrorsSortByLineThenUnknown(t *testing.T) {
	es := Errors{{Path: "no-line-1"}, {Line: 9, Path: "nine"}, {Path: "no-line-2"}, {Line: 2, Path: "two"}, {Line: 9, Path: "nine-b"}}
	es.sort()
	var got []string
	for _, e := range es {
		got = append(got, e.Path)
	}
	if want := "two nine nine-b no-line-1 no-line-2"; strings.Join(got, " ") != want {
		t.Errorf("order %q, want %q", strings.Join(got, " "), want)
	}
}

// TestLoadNamesTheFile checks the FILE:LINE form on a real file.
func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.toml")
	body := "[upstream]\nurl = \"http://127.0.0.1:9000\"\n[[group]]\nname = \"a\"\n  [group.rate]\n  rate = 10\n  cost = 5\n  burst = 2\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := "configs: " + path + ":8: group[0].rate.burst: must be ≥ cost (5), got 2"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v\nwant %s", err, want)
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].File != path || es[0].Line != 8 || es[0].Path != "group[0].rate.burst" {
		t.Errorf("Errors = %#v", es)
	}
}

func TestLoadUnreadable(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.toml"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "configs: ") {
		t.Errorf("Load(missing) = %v, want a configs: error wrapping fs.ErrNotExist", err)
	}
}

func TestParseRefusesHugeFiles(t *testing.T) {
	data := []byte("# " + strings.Repeat("x", maxFileSize) + "\n")
	_, err := Parse("big.toml", data)
	if err == nil || !strings.Contains(err.Error(), "big.toml: file is larger than") {
		t.Errorf("Parse(huge) = %v", err)
	}
}

// TestDecodeErrorsAreNotRepeated checks that a value that failed to decode
// is not reported again by validation, while its neighbours still are.
func TestDecodeErrorsAreNotRepeated(t *testing.T) {
	data := "[upstream]\nurl = \"http://h:1\"\n[[group]]\nname = \"a\"\nrate = { rate = \"fast\", cost = 0.5 }\nconcurrency = { min = 5, max = 2 }\n"
	_, err := Parse("", []byte(data))
	want := "configs: 3 problems:\n" +
		"  line 5: group[0].rate.rate: must be a number, got string \"fast\"\n" +
		"  line 5: group[0].rate.cost: must be an integer, got float 0.5\n" +
		"  line 6: group[0].concurrency.min: must be ≤ max (2), got 5"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestSyntaxErrorLine(t *testing.T) {
	tests := []struct {
		data string
		line int
	}{
		{"[upstream\n", 1},
		{"a = 1\nb =\n", 2},
		{"a = 1\nb = [\n1,\n2,,]\n", 4},
		{"\xef\xbb\xbfa = 1\nb = \"x\" oops\n", 2},
		{"a=1\na=2\n", 2},
	}
	for _, tt := range tests {
		_, err := Parse("", []byte(tt.data))
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || es[0].Line != tt.line || !strings.HasPrefix(es[0].Msg, "invalid TOML: ") {
			t.Errorf("%q: %v, want one syntax error on line %d", tt.data, err, tt.line)
		}
	}
}
