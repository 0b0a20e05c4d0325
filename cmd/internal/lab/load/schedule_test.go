package load

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const sec = time.Second

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// steps: 100 req/s for 2 s, a ramp 100→300 over 2 s, nothing for 1 s,
// then 50 req/s for 1 s.
var steps = Schedule{
	{Label: "flat", For: 2 * sec, From: 100, To: 100},
	{Label: "ramp", For: 2 * sec, From: 100, To: 300},
	{Label: "pause", For: sec, From: 0, To: 0},
	{Label: "tail", For: sec, From: 50, To: 50},
}

func TestScheduleRateAndExpected(t *testing.T) {
	if d := steps.Duration(); d != 6*sec {
		t.Fatalf("Duration %v", d)
	}
	for _, tc := range []struct {
		at   time.Duration
		rate float64
		i    int
	}{
		{0, 100, 0}, {1999 * time.Millisecond, 100, 0}, {2 * sec, 100, 1}, {3 * sec, 200, 1},
		{3500 * time.Millisecond, 250, 1}, {4 * sec, 0, 2}, {5 * sec, 50, 3}, {6 * sec, 0, -1}, {-sec, 0, 0},
	} {
		if got := steps.RateAt(tc.at); math.Abs(got-tc.rate) > 1e-9 {
			t.Errorf("RateAt(%v) = %v, want %v", tc.at, got, tc.rate)
		}
		if tc.at >= 0 {
			if i, _ := steps.PhaseAt(tc.at); i != tc.i {
				t.Errorf("PhaseAt(%v) = %d, want %d", tc.at, i, tc.i)
			}
		}
	}
	for _, tc := range []struct {
		a, b time.Duration
		want float64
	}{
		{0, 2 * sec, 200}, {2 * sec, 4 * sec, 400}, {2 * sec, 3 * sec, 150}, {0, 6 * sec, 650},
		{sec, 3 * sec, 250}, {4 * sec, 5 * sec, 0}, {5 * sec, 10 * sec, 50},
	} {
		if got := steps.Expected(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Expected(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestScheduleNext checks the time change step by step: from t, the
// instant at which the integrated rate has grown by e.
func TestScheduleNext(t *testing.T) {
	for i, tc := range []struct {
		t    time.Duration
		e    float64
		want time.Duration
		ok   bool
	}{
		{0, 1, ms(10), true},                  // 100 req/s: one unit takes 10 ms
		{ms(500), 0.5, ms(505), true},         // half a unit from 0.5 s
		{ms(1990), 2, ms(2010), true},         // crosses into the ramp (1 unit at 100, then ~1 at ~100)
		{2 * sec, 150, 3 * sec, true},         // area of the ramp's first second is 150
		{3 * sec, 250, 4 * sec, true},         // and of its second second 250
		{ms(3999), 1, 5*sec + ms(14), true},   // skips the pause: 0.3 in the ramp, 0.7 at 50 req/s = 14 ms
		{5 * sec, 51, 0, false},               // past the end
		{6 * sec, 0.001, 0, false},            // at the end
		{ms(4500), 0.5, 5*sec + ms(10), true}, // from inside the pause: 0.5 at 50 req/s
	} {
		got, ok := steps.Next(tc.t, tc.e)
		if ok != tc.ok || (ok && (got-tc.want).Abs() > 100*time.Microsecond) {
			t.Errorf("row %d: Next(%v, %v) = %v, %v; want %v, %v", i, tc.t, tc.e, got, ok, tc.want, tc.ok)
		}
	}
	// From zero on a ramp 0→100 over 1 s the area is 50·u², so 0.5 units take 100 ms.
	ramp := Schedule{{For: sec, From: 0, To: 100}}
	if got, _ := ramp.Next(0, 0.5); (got - ms(100)).Abs() > time.Microsecond {
		t.Errorf("ramp from zero: Next = %v, want 100ms", got)
	}
	// A falling ramp 100→0: area of the first u seconds is 100u - 50u², so 37.5 units take 0.5 s.
	fall := Schedule{{For: sec, From: 100, To: 0}}
	if got, _ := fall.Next(0, 37.5); (got - ms(500)).Abs() > time.Microsecond {
		t.Errorf("falling ramp: Next = %v, want 500ms", got)
	}
	if got, ok := fall.Next(0, 50); !ok || (got-sec).Abs() > time.Microsecond {
		t.Errorf("falling ramp, whole area: Next = %v, %v; want 1s", got, ok)
	}
}

// TestArrivalsArePoisson draws the arrivals of a seeded run and checks
// counts per phase against the schedule (Poisson: variance = mean, so 4σ
// is √mean·4) and the inter-arrival times of the flat phase (exponential:
// mean 1/rate, coefficient of variation 1).
func TestArrivalsArePoisson(t *testing.T) {
	long := Schedule{
		{For: 100 * sec, From: 100, To: 100},
		{For: 100 * sec, From: 100, To: 300},
		{For: 20 * sec},
		{For: 100 * sec, From: 50, To: 50},
	}
	a := NewArrivals(long, rand.New(rand.NewPCG(7, 7)))
	counts := make([]float64, len(long))
	var gaps []float64
	prev := time.Duration(0)
	for {
		at, ok := a.Next()
		if !ok {
			break
		}
		if at < prev {
			t.Fatalf("arrival %v before the previous %v", at, prev)
		}
		i, _ := long.PhaseAt(at)
		counts[i]++
		if i == 0 {
			gaps = append(gaps, (at - prev).Seconds())
		}
		prev = at
	}
	var begin time.Duration
	for i, p := range long {
		want := long.Expected(begin, begin+p.For)
		if math.Abs(counts[i]-want) > 4*math.Sqrt(want)+1 {
			t.Errorf("phase %d: %v arrivals, want %v ± %v", i, counts[i], want, 4*math.Sqrt(want))
		}
		begin += p.For
	}
	var sum, sumSq float64
	for _, g := range gaps {
		sum += g
		sumSq += g * g
	}
	n := float64(len(gaps))
	mean := sum / n
	cv := math.Sqrt(sumSq/n-mean*mean) / mean
	if math.Abs(mean-0.01) > 0.0005 || math.Abs(cv-1) > 0.05 {
		t.Errorf("flat phase gaps: mean %v s (want 0.01), CV %v (want 1)", mean, cv)
	}
}

func TestScheduleValidate(t *testing.T) {
	errs := Schedule{{For: 0, From: -1, To: 2e6}}.Validate()
	want := []string{"duration must be positive", "rate must be in", "rate must be in"}
	if len(errs) != len(want) {
		t.Fatalf("Validate() = %v", errs)
	}
	for i, e := range errs {
		if !strings.Contains(e.Error(), want[i]) || !strings.HasPrefix(e.Error(), "load: ") {
			t.Errorf("error %d = %v, want %q", i, e, want[i])
		}
	}
	if errs := (Schedule{}).Validate(); len(errs) != 1 {
		t.Errorf("empty schedule: %v", errs)
	}
}
