package h1

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// FuzzChunkSize checks the chunk-size parser against strconv for plain hex.
func FuzzChunkSize(f *testing.F) {
	for _, s := range []string{"0", "a", "FF", "10;ext=1", "1f ; n=\"v\"", "", "g", "fffffffffffffff", "1\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		n, err := ParseChunkSize(line)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("negative size %d", n)
		}
		hex := line
		if i := bytes.IndexAny(hex, " \t;"); i >= 0 {
			hex = hex[:i]
		}
		want, perr := strconv.ParseInt(string(hex), 16, 64)
		if perr != nil || want != n {
			t.Fatalf("parseChunkSize(%q) = %d, strconv says %d (%v)", line, n, want, perr)
		}
	})
}

// FuzzContentLength checks the Content-Length parser against strconv: what it
// takes is a plain decimal number.
func FuzzContentLength(f *testing.F) {
	for _, s := range []string{"0", "42", "7, 7", "1,2", "-1", "+1", " 8 ", "999999999999999999", "99999999999999999999", ","} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		n, ok := ParseContentLength(v)
		want, err := strconv.ParseUint(string(v), 10, 63)
		digits := len(v) > 0 && strings.Trim(string(v), "0123456789") == ""
		if ok != (err == nil && digits && len(v) <= 18) || ok && int64(want) != n {
			t.Fatalf("parseContentLength(%q) = %d, %v; strconv says %d (%v)", v, n, ok, want, err)
		}
	})
}

// FuzzTokens checks the comma-list scanner against a plain split.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{"close", "keep-alive, Upgrade", " , a ,, b\t", "", ","} {
		f.Add(s, "upgrade")
	}
	f.Fuzz(func(t *testing.T, list, tok string) {
		want := false
		for _, e := range strings.Split(list, ",") {
			if e = strings.Trim(e, " \t"); e != "" && strings.EqualFold(e, tok) {
				want = true
			}
		}
		if got := HasToken([]string{list}, tok); got != want {
			t.Fatalf("hasToken(%q, %q) = %v, want %v", list, tok, got, want)
		}
	})
}
