package pause

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// A pause of 300 ms every 3 s from 3 s: work of 10 ms started 5 ms before a
// pause ends 295 ms late; started inside one, 10 ms after it ends; started
// between, on time.
func TestEnd(t *testing.T) {
	p := Periodic{For: 300 * ms, Every: 3 * time.Second, From: 3 * time.Second}
	for _, tc := range []struct{ start, work, want time.Duration }{
		{0, 10 * ms, 10 * ms},
		{2995 * ms, 10 * ms, 3305 * ms},
		{3000 * ms, 10 * ms, 3310 * ms},
		{3100 * ms, 10 * ms, 3310 * ms},
		{3300 * ms, 10 * ms, 3310 * ms},
		{4000 * ms, 10 * ms, 4010 * ms},
		{5995 * ms, 10 * ms, 6305 * ms},
		// Work longer than a period crosses two pauses.
		{2900 * ms, 3 * time.Second, 2900*ms + 3*time.Second + 600*ms},
		// Work that ends exactly as a pause begins ends then, not after it.
		{2990 * ms, 10 * ms, 3000 * ms},
	} {
		if got := p.End(tc.start, tc.work); got != tc.want {
			t.Errorf("End(%v, %v) = %v, want %v", tc.start, tc.work, got, tc.want)
		}
	}
	if got := (Periodic{}).End(time.Second, ms); got != time.Second+ms {
		t.Errorf("no pause: End = %v", got)
	}
}

// At inverts Active, and no work ends inside a pause.
func TestActiveAt(t *testing.T) {
	p := Periodic{For: 70 * ms, Every: 250 * ms, From: 40 * ms}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		start := time.Duration(rng.Int64N(int64(5 * time.Second)))
		work := time.Duration(rng.Int64N(int64(time.Second)))
		end := p.End(start, work)
		if got := p.Active(end) - p.Active(start); got != work {
			t.Fatalf("start %v work %v: end %v holds %v of work", start, work, end, got)
		}
		if _, in := p.Until(end); in && work > 0 {
			t.Fatalf("start %v work %v: ends at %v, inside a pause", start, work, end)
		}
		if a := time.Duration(rng.Int64N(int64(5 * time.Second))); p.Active(p.At(a)) != a {
			t.Fatalf("Active(At(%v)) = %v", a, p.Active(p.At(a)))
		}
	}
	if s := p.Share(); s != 0.28 {
		t.Errorf("share %v", s)
	}
}

func TestUntil(t *testing.T) {
	p := Periodic{For: 300 * ms, Every: 3 * time.Second, From: 3 * time.Second}
	for _, tc := range []struct {
		t, want time.Duration
		in      bool
	}{
		{2999 * ms, 0, false}, {3000 * ms, 3300 * ms, true}, {3299 * ms, 3300 * ms, true},
		{3300 * ms, 0, false}, {6100 * ms, 6300 * ms, true},
	} {
		if got, in := p.Until(tc.t); got != tc.want || in != tc.in {
			t.Errorf("Until(%v) = %v, %v; want %v, %v", tc.t, got, in, tc.want, tc.in)
		}
	}
}

func TestParse(t *testing.T) {
	p, err := Parse("for=300ms,every=3s")
	if err != nil || p != (Periodic{For: 300 * ms, Every: 3 * time.Second, From: 3 * time.Second}) {
		t.Fatalf("Parse: %+v, %v", p, err)
	}
	if q, err := Parse(p.String()); err != nil || q != p {
		t.Errorf("round trip: %+v, %v", q, err)
	}
	if p, err := Parse(""); err != nil || p.On() {
		t.Errorf("empty: %+v, %v", p, err)
	}
	for in, want := range map[string]string{
		"for=3s,every=1s":          "must be longer than",
		"for=1s,every=3s,from=-1s": "must not be negative",
		"for=1s,every=3s,at=1s":    `unknown key "at"`,
		"for=x,every=3s":           "for: time: invalid duration",
		"every=3s":                 "for 0s must be positive",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want %q", in, err, want)
		}
	}
}
