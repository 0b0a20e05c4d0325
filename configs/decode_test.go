package configs

import (
	"math"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	long := strings.Repeat("x", 65)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"burst", "burst", 0},
		{"brust", "burst", 2},            // a transposition is two edits
		{"concurency", "concurrency", 1}, // an insertion
		{"latencyy", "latency", 1},       // a deletion
		{"kitten", "sitting", 3},
		{"max_wait", "max", 5},
		{"é", "e", 2}, // bytes, not runes: é is two bytes
		{strings.Repeat("x", 64), strings.Repeat("y", 64), 64},
		{long, "x", math.MaxInt},
		{"x", long, math.MaxInt},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := EditDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
