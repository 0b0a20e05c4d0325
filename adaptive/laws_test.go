package adaptive

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// lawMakers builds every law with the same bounds; one suite runs against all
// of them (as uber-go/ratelimit tests every implementation).
var lawMakers = []struct {
	name string
	make func(b Bounds) (Law, error)
}{
	{"fixed", func(b Bounds) (Law, error) { return NewFixed(FixedParams{Bounds: b}) }},
	{"aimd", func(b Bounds) (Law, error) {
		return NewAIMD(AIMDParams{Bounds: b, Latency: 100 * time.Millisecond})
	}},
	{"vegas", func(b Bounds) (Law, error) { return NewVegas(VegasParams{Bounds: b}) }},
	{"gradient", func(b Bounds) (Law, error) { return NewGradient(GradientParams{Bounds: b}) }},
	{"target", func(b Bounds) (Law, error) {
		return NewTarget(TargetParams{Bounds: b, Latency: 100 * time.Millisecond, CPU: 0.8, Memory: 0.85,
			Rate: RateParams{Initial: 500}})
	}},
}

// randomSample returns a sample with every field drawn over a wide range,
// including nonsense (negative counts, NaN utilisation, zero interval).
func randomSample(r *rand.Rand, now time.Time, limit int) Sample {
	d := func(max time.Duration) time.Duration { return time.Duration(r.Int64N(int64(max))) }
	lat := d(2 * time.Second)
	s := Sample{
		Now: now, Interval: []time.Duration{0, 250 * time.Millisecond, time.Second}[r.IntN(3)],
		Limit: limit, InFlight: r.IntN(2*limit + 1), MaxInFlight: r.IntN(2*limit + 1),
		Successes: r.IntN(2000) - 10, Drops: r.IntN(50) - 5, Rejected: r.IntN(100) - 5,
		RateRejected: r.IntN(10), Queued: r.IntN(10), QueueLength: r.IntN(10), QueueCapacity: r.IntN(200),
		Latency: Latency{Min: lat / 4, Mean: lat / 2, P50: lat / 2, P90: lat, P95: lat, P99: lat + d(time.Second), P999: 2 * lat},
		MinRTT:  d(10 * time.Millisecond), Throughput: float64(r.IntN(5000)),
		CPU: r.Float64() * 1.2, CPUKnown: r.IntN(2) == 0, Memory: r.Float64(), MemoryKnown: r.IntN(2) == 0,
	}
	if r.IntN(10) == 0 {
		s.CPU = math.NaN()
	}
	if r.IntN(10) == 0 {
		s.Latency = Latency{}
	}
	return s
}

func TestLawsKeepBoundsAndExplainChanges(t *testing.T) {
	b := Bounds{Min: 3, Max: 300, Initial: 40}
	for _, lm := range lawMakers {
		t.Run(lm.name, func(t *testing.T) {
			law, err := lm.make(b)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			prev, prevRate := law.Limit(), 0.0
			if tl, ok := law.(*Target); ok {
				prevRate = tl.Rate()
			}
			for i := 0; i < 5000; i++ {
				now = now.Add(250 * time.Millisecond)
				d := law.Update(randomSample(r, now, prev))
				if d.Limit < b.Min || d.Limit > b.Max {
					t.Fatalf("step %d: limit %d outside [%d, %d]", i, d.Limit, b.Min, b.Max)
				}
				if d.Limit != law.Limit() {
					t.Fatalf("step %d: decision %d but Limit() %d", i, d.Limit, law.Limit())
				}
				changed := d.Limit != prev || d.Rate != prevRate
				if d.Changed != changed {
					t.Fatalf("step %d: Changed %v, but limit %d->%d rate %v->%v", i, d.Changed, prev, d.Limit, prevRate, d.Rate)
				}
				if d.Changed && d.Reason.String() == "" {
					t.Fatalf("step %d: change %d->%d without a reason", i, prev, d.Limit)
				}
				if math.IsNaN(d.Rate) || d.Rate < 0 || math.IsInf(d.Rate, 0) {
					t.Fatalf("step %d: rate %v", i, d.Rate)
				}
				prev, prevRate = d.Limit, d.Rate
			}
		})
	}
}

// An idle limit is never raised, however healthy the service looks.
func TestLawsAppLimitedGuard(t *testing.T) {
	for _, lm := range lawMakers {
		t.Run(lm.name, func(t *testing.T) {
			law, err := lm.make(Bounds{Initial: 100})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < 200; i++ {
				now = now.Add(250 * time.Millisecond)
				d := law.Update(Sample{Now: now, Limit: law.Limit(), MaxInFlight: 10, InFlight: 5, Successes: 400,
					Latency: Latency{Min: 5 * time.Millisecond, Mean: 10 * time.Millisecond, P50: 10 * time.Millisecond,
						P90: 15 * time.Millisecond, P95: 18 * time.Millisecond, P99: 20 * time.Millisecond, P999: 25 * time.Millisecond},
					Throughput: 500, CPU: 0.1, CPUKnown: true, Memory: 0.1, MemoryKnown: true})
				if d.Limit > 100 {
					t.Fatalf("interval %d: an idle limit rose to %d (%s)", i, d.Limit, d.Reason)
				}
			}
		})
	}
}

// A law constructed with a saved limit starts there (state-file restore).
func TestLawsRestartFromSavedLimit(t *testing.T) {
	for _, lm := range lawMakers {
		t.Run(lm.name, func(t *testing.T) {
			b := Bounds{Min: 2, Max: 500}
			saved := b.Clamp(137)
			law, err := lm.make(Bounds{Min: 2, Max: 500, Initial: saved})
			if err != nil {
				t.Fatal(err)
			}
			if law.Limit() != 137 {
				t.Fatalf("restarted at %d, want 137", law.Limit())
			}
			d := law.Update(Sample{Now: time.Unix(1, 0)})
			if d.Limit != 137 || d.Changed {
				t.Fatalf("empty sample moved the restored limit: %+v", d)
			}
		})
	}
	if got := (Bounds{Min: 2, Max: 500}).Clamp(9000); got != 500 {
		t.Fatalf("Clamp(9000) = %d, want 500", got)
	}
	if got := (Bounds{}).Clamp(0); got != DefaultMinLimit {
		t.Fatalf("Clamp(0) with defaults = %d, want %d", got, DefaultMinLimit)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"bounds", Bounds{Min: -1, Max: -2, Initial: -3}.Validate(), []string{
			"adaptive: min limit -1 must be positive", "adaptive: max limit -2 must be positive",
			"adaptive: initial limit -3 must be positive"}},
		{"bounds order", Bounds{Min: 10, Max: 5}.Validate(), []string{"adaptive: max limit 5 is below min limit 10"}},
		{"initial outside", Bounds{Min: 10, Max: 50, Initial: 60}.Validate(), []string{"adaptive: initial limit 60 is outside [10, 50]"}},
		{"aimd", AIMDParams{Increase: -1, Backoff: 1.5, Latency: -time.Second, UseRatio: 2}.Validate(), []string{
			"aimd increase -1", "aimd backoff 1.5", "aimd latency bound -1s", "use ratio 2"}},
		{"vegas", VegasParams{Alpha: 8, Beta: 4}.Validate(), []string{"vegas beta 4 is below alpha 8"}},
		{"gradient", GradientParams{Tolerance: 0.5, Smoothing: 2, LongWindow: -1, QueueSize: -1, MaxInflation: 0.5}.Validate(), []string{
			"tolerance 0.5", "smoothing 2", "long window -1", "queue size -1", "max inflation 0.5"}},
		{"target none", TargetParams{}.Validate(), []string{"target law needs at least one target"}},
		{"target values", TargetParams{Latency: -time.Second, CPU: 1.5, Memory: math.NaN(), Headroom: 0.7, Gain: 3,
			Rate: RateParams{Initial: 5, Min: 10, Max: 8}}.Validate(), []string{
			"latency target -1s", "cpu target 1.5", "memory target NaN", "headroom 0.7", "gain 3",
			"max rate 8 is below min rate 10", "initial rate 5 is outside [10, 8]"}},
		{"shedder", ShedderParams{Suffer: 1.5, Hold: -time.Second}.Validate(), []string{"shedder suffer ratio 1.5", "shedder hold -1s"}},
		{"guard", ResourceGuardParams{CPU: 2, Memory: -1, Hysteresis: 0.6}.Validate(), []string{"guard cpu target 2", "guard memory target -1", "guard hysteresis 0.6"}},
		{"queue wait", QueueWaitParams{Target: 200 * time.Millisecond, Interval: 100 * time.Millisecond, Order: 9, Latency: -1}.Validate(), []string{
			"queue wait interval 100ms is below target 200ms", "unknown queue order 9", "queue wait latency target -1ns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			msg := tc.err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			for _, line := range strings.Split(msg, "\n") {
				if !strings.HasPrefix(line, "adaptive: ") {
					t.Errorf("error line %q lacks the package prefix", line)
				}
			}
		})
	}
	for _, ok := range []error{Bounds{}.Validate(), AIMDParams{}.Validate(), VegasParams{}.Validate(),
		GradientParams{}.Validate(), TargetParams{CPU: 0.8}.Validate(), ShedderParams{}.Validate(),
		ResourceGuardParams{}.Validate(), QueueWaitParams{}.Validate(), FixedParams{}.Validate()} {
		if ok != nil {
			t.Errorf("zero params (defaults) rejected: %v", ok)
		}
	}
	if _, err := NewTarget(TargetParams{}); err == nil {
		t.Error("NewTarget accepted params without a target")
	}
}

func TestReasonStrings(t *testing.T) {
	ms := func(v float64) float64 { return v / 1000 }
	for _, tc := range []struct {
		r    Reason
		want string
	}{
		{Reason{Signal: SignalLatency, Quantile: P99, Observed: ms(310), Bound: ms(200)}, "p99 310ms > target 200ms"},
		{Reason{Signal: SignalLatency, Quantile: P99, Observed: ms(97), Bound: ms(95), Target: ms(100)}, "p99 97ms > 95ms (target 100ms)"},
		{Reason{Signal: SignalLatency, Quantile: P999, Observed: ms(12.345), Bound: ms(20)}, "p99.9 12.3ms < target 20ms"},
		{Reason{Signal: SignalCPU, Observed: 0.92, Bound: 0.8}, "cpu 92% > target 80%"},
		{Reason{Signal: SignalMemory, Observed: 0.855, Bound: 0.85}, "memory 85.5% > target 85%"},
		{Reason{Signal: SignalDrops, Observed: 0.032, Bound: 0.01}, "drops 3.2% > 1%"},
		{Reason{Signal: SignalQueue, Observed: 7.1, Bound: 6}, "queue 7.1 > 6"},
		{Reason{Signal: SignalAppLimited, Observed: 12, Bound: 40}, "not in use, 12 of 40 in flight"},
		{Reason{Signal: SignalNoQueueing, Observed: ms(10), Bound: ms(11)}, "no queueing, mean 10ms < 11ms: slow start"},
		// Issue 24: "p99 47.2ms > 39.2ms: overloaded … (target 200ms)" called a
		// p99 far under its target overloaded, by a threshold nobody set. It
		// says what the law judged: the refused share, and the knee it aims at
		// with what the knee is made of.
		{Reason{Signal: SignalOverload, Quantile: P99, Observed: ms(47.2), Bound: ms(39.2), Target: ms(200),
			Refused: 0.35, NoQueue: ms(39.2) / 1.1},
			"35% of the demand refused, so aiming at the backend's knee, not the target: p99 47.2ms > knee 39.2ms (no-queue p99 35.6ms + 10%), target 200ms"},
		{Reason{Signal: SignalStalled, Observed: 0.039, Bound: 0.5}, "completions stalled: 3.9% of the work in flight came back (50% keeps up)"},
		{Reason{Signal: SignalStalled}, "completions resumed after a stall: its latency is the stall's, not the limit's"},
		{Reason{Signal: SignalKneeCost, Observed: 1350, Bound: 1500}, "a cut toward the knee cost completions, 1350/s from 1500/s: limit restored, the knee is not below it"},
		{Reason{Signal: SignalKneeBurst, Observed: 0.071, Bound: 0.075}, "the overload ended, 7.1% of the demand refused (under 7.5%): it was a burst, the limit before the cut toward the knee restored"},
		{Reason{}, ""},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestRejectionNames(t *testing.T) {
	want := []string{"", "rate", "concurrency", "queue_timeout", "queue_full", "cpu", "memory", "priority", "circuit_open", "fair_share", "streams"}
	if len(want) != NumRejections {
		t.Fatalf("%d names for %d rejections", len(want), NumRejections)
	}
	for i, w := range want {
		if got := RejectReason(i).String(); got != w {
			t.Errorf("RejectReason(%d) = %q, want %q", i, got, w)
		}
	}
	if got := RejectReason(200).String(); got != "unknown" {
		t.Errorf("out of range: %q", got)
	}
}

func TestFloor(t *testing.T) {
	f := Floor{Priority: Default, Reason: RejectCPU}
	if ok, why := f.Admit(Sheddable); ok || why != RejectCPU {
		t.Errorf("sheddable passed a default floor: %v %v", ok, why)
	}
	if ok, why := f.Admit(Critical); !ok || why != RejectNone {
		t.Errorf("critical refused: %v %v", ok, why)
	}
	m := Floor{Priority: Critical, Reason: RejectMemory}
	if got := f.Max(m); got != m {
		t.Errorf("Max = %v, want the memory floor", got)
	}
	if got := m.Max(f); got != m {
		t.Errorf("Max is not symmetric in restriction: %v", got)
	}
	for _, x := range []Floor{{}, f, m, {Priority: 5, Reason: RejectPriority}} {
		if got := UnpackFloor(x.Pack()); got != x {
			t.Errorf("Unpack(Pack(%v)) = %v", x, got)
		}
	}
	if ok, _ := (Floor{}).Admit(Sheddable); !ok {
		t.Error("the zero floor refused a request")
	}
}

func TestParseNames(t *testing.T) {
	for _, s := range []string{"sheddable", "default", "critical", "3"} {
		p, ok := ParsePriority(s)
		if !ok || (s != "3" && p.String() != s) {
			t.Errorf("ParsePriority(%q) = %v, %v", s, p, ok)
		}
	}
	for _, s := range []string{"", "8", "-1", "urgent"} {
		if _, ok := ParsePriority(s); ok {
			t.Errorf("ParsePriority(%q) accepted", s)
		}
	}
	for _, s := range []string{"p50", "p90", "p95", "p99", "p99.9", "mean"} {
		q, ok := ParseQuantile(s)
		if !ok || q.String() != s {
			t.Errorf("ParseQuantile(%q) = %v, %v", s, q, ok)
		}
	}
	for _, s := range []string{"fifo", "lifo", "adaptive"} {
		o, ok := ParseOrder(s)
		if !ok || o.String() != s {
			t.Errorf("ParseOrder(%q) = %v, %v", s, o, ok)
		}
	}
}

// FuzzLawUpdate feeds every law arbitrary samples: no panic, bounds kept.
func FuzzLawUpdate(f *testing.F) {
	f.Add(int64(100), int64(30), int64(250), int64(5), int64(40), 0.9, 0.5, int64(20), int64(3))
	f.Add(int64(0), int64(0), int64(0), int64(0), int64(0), 0.0, 0.0, int64(0), int64(0))
	f.Add(int64(-5), int64(1<<62), int64(-1), int64(1<<40), int64(-7), math.NaN(), math.Inf(1), int64(-1), int64(1<<40))
	f.Fuzz(func(t *testing.T, p99, mean, ok, drops, maxin int64, cpu, mem float64, qlen, qcap int64) {
		for _, lm := range lawMakers {
			law, err := lm.make(Bounds{Min: 2, Max: 400, Initial: 50})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(0, 0)
			for i := 0; i < 4; i++ {
				now = now.Add(250 * time.Millisecond)
				s := Sample{Now: now, Limit: law.Limit(), MaxInFlight: int(maxin), InFlight: int(maxin),
					Successes: int(ok), Drops: int(drops), QueueLength: int(qlen), QueueCapacity: int(qcap),
					Latency: Latency{Mean: time.Duration(mean), P50: time.Duration(mean), P99: time.Duration(p99)},
					CPU:     cpu, CPUKnown: true, Memory: mem, MemoryKnown: true}
				d := law.Update(s)
				if d.Limit < 2 || d.Limit > 400 {
					t.Fatalf("%s: limit %d outside [2, 400] for %+v", lm.name, d.Limit, s)
				}
				if math.IsNaN(d.Rate) || d.Rate < 0 {
					t.Fatalf("%s: rate %v", lm.name, d.Rate)
				}
			}
		}
	})
}

// TestQuantileAtLeast: a configured quantile is read from the nearest figure
// at or above it, never a looser one.
func TestQuantileAtLeast(t *testing.T) {
	for q, want := range map[float64]Quantile{0.5: P50, 0.75: P90, 0.9: P90, 0.95: P95, 0.96: P99, 0.99: P99, 0.995: P999, 0.9999: P999} {
		if got := QuantileAtLeast(q); got != want {
			t.Errorf("QuantileAtLeast(%v) = %v, want %v", q, got, want)
		}
	}
}
