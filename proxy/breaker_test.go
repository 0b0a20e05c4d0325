package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// breakerStep is one step at a fixed instant: an action, and what it must report.
type breakerStep struct {
	at     time.Duration // since t0
	do     string        // "allow", "ok", "fail", "ignore": record on the permit of step ref
	ref    int           // for records: the index of the allow step whose permit is recorded
	allow  bool          // for "allow": the wanted answer
	state  BreakerState  // the state after the step
	retryS time.Duration // for "allow" refused: the wanted RetryAfter (-1: don't check)
}

func runBreakerSteps(t *testing.T, p BreakerParams, steps []breakerStep) {
	t.Helper()
	b, err := NewBreaker(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	permits := make([]Permit, len(steps))
	for i, s := range steps {
		now := t0.Add(s.at)
		switch s.do {
		case "allow":
			pm, ok := b.Allow(now)
			permits[i] = pm
			if ok != s.allow {
				t.Fatalf("step %d: Allow(t0+%v) = %v, want %v", i, s.at, ok, s.allow)
			}
			if !ok && s.retryS >= 0 {
				if got := b.RetryAfter(now); got != s.retryS {
					t.Fatalf("step %d: RetryAfter(t0+%v) = %v, want %v", i, s.at, got, s.retryS)
				}
			}
		case "ok":
			b.Record(permits[s.ref], gate.Success, now)
		case "fail":
			b.Record(permits[s.ref], gate.Dropped, now)
		case "ignore":
			b.Record(permits[s.ref], gate.Ignored, now)
		default:
			t.Fatalf("step %d: unknown action %q", i, s.do)
		}
		if got := b.State(); got != s.state {
			t.Fatalf("step %d (%s at t0+%v): state %v, want %v", i, s.do, s.at, got, s.state)
		}
	}
}

// allowN returns n steps that allow at `at` and then record each with do.
func allowN(n int, at time.Duration, do string, first int, state BreakerState) []breakerStep {
	var s []breakerStep
	for i := 0; i < n; i++ {
		s = append(s, breakerStep{at: at, do: "allow", allow: true, state: BreakerClosed, retryS: -1},
			breakerStep{at: at, do: do, ref: first + 2*i, state: state})
	}
	return s
}

func TestBreakerConsecutiveFailuresOpen(t *testing.T) {
	p := BreakerParams{ConsecutiveFailures: 3, MinRequests: 100, Cooldown: 5 * time.Second}
	steps := []breakerStep{
		{at: 0, do: "allow", allow: true, state: BreakerClosed},               // 0
		{at: 0, do: "fail", ref: 0, state: BreakerClosed},                     // 1
		{at: 0, do: "allow", allow: true, state: BreakerClosed},               // 2
		{at: 0, do: "fail", ref: 2, state: BreakerClosed},                     // 3
		{at: 0, do: "allow", allow: true, state: BreakerClosed},               // 4
		{at: 0, do: "ok", ref: 4, state: BreakerClosed},                       // 5: a success resets the run
		{at: 0, do: "allow", allow: true, state: BreakerClosed},               // 6
		{at: 0, do: "fail", ref: 6, state: BreakerClosed},                     // 7
		{at: 0, do: "allow", allow: true, state: BreakerClosed},               // 8
		{at: 0, do: "fail", ref: 8, state: BreakerClosed},                     // 9
		{at: 1 * time.Second, do: "allow", allow: true, state: BreakerClosed}, // 10
		{at: 1 * time.Second, do: "fail", ref: 10, state: BreakerOpen},        // 11: third in a row
		{at: 1 * time.Second, do: "allow", allow: false, state: BreakerOpen, retryS: 5 * time.Second},
		{at: 5999 * time.Millisecond, do: "allow", allow: false, state: BreakerOpen, retryS: time.Millisecond},
	}
	runBreakerSteps(t, p, steps)
}

func TestBreakerRatioOpens(t *testing.T) {
	// 10 requests minimum, half failing opens; consecutive failures out of reach.
	p := BreakerParams{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000, Window: 10 * time.Second, Buckets: 10}
	var steps []breakerStep
	// 6 successes, then alternate failures: after 4 failures, 10 requests, 40 %.
	steps = append(steps, allowN(6, 0, "ok", 0, BreakerClosed)...)
	steps = append(steps, allowN(4, time.Second, "fail", len(steps), BreakerClosed)...)
	// The fifth failure: 11 requests, 5 failed = 45 %: still closed.
	steps = append(steps, allowN(1, time.Second, "fail", len(steps), BreakerClosed)...)
	// The sixth: 12 requests, 6 failed = 50 %: open.
	steps = append(steps, allowN(1, 2*time.Second, "fail", len(steps), BreakerOpen)...)
	runBreakerSteps(t, p, steps)
}

func TestBreakerRatioNeedsMinRequests(t *testing.T) {
	p := BreakerParams{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000}
	// 9 failures out of 9: below the minimum, the circuit stays closed.
	steps := allowN(9, 0, "fail", 0, BreakerClosed)
	runBreakerSteps(t, p, steps)
}

func TestBreakerWindowRolls(t *testing.T) {
	p := BreakerParams{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000, Window: 10 * time.Second, Buckets: 10}
	var steps []breakerStep
	// 5 failures at t0, separated by successes so no run forms.
	for i := 0; i < 5; i++ {
		steps = append(steps, allowN(1, 0, "fail", len(steps), BreakerClosed)...)
		steps = append(steps, allowN(1, 0, "ok", len(steps), BreakerClosed)...)
	}
	// 10 s later the t0 bucket has left the window: 6 new failures among 7 is
	// below the minimum of 10 requests, so still closed...
	steps = append(steps, allowN(1, 10*time.Second, "ok", len(steps), BreakerClosed)...)
	steps = append(steps, allowN(6, 10*time.Second, "fail", len(steps), BreakerClosed)...)
	// ...had the old bucket counted, 17 requests with 11 failures would have opened it.
	runBreakerSteps(t, p, steps)
}

func TestBreakerHalfOpenProbes(t *testing.T) {
	p := BreakerParams{ConsecutiveFailures: 1, Cooldown: time.Second, Probes: 2}
	steps := []breakerStep{
		{at: 0, do: "allow", allow: true, state: BreakerClosed}, // 0
		{at: 0, do: "allow", allow: true, state: BreakerClosed}, // 1: in flight when it opens
		{at: 0, do: "fail", ref: 0, state: BreakerOpen},         // 2
		{at: 500 * time.Millisecond, do: "allow", allow: false, state: BreakerOpen, retryS: 500 * time.Millisecond},
		{at: time.Second, do: "allow", allow: true, state: BreakerHalfOpen}, // 4: probe 1
		{at: time.Second, do: "allow", allow: true, state: BreakerHalfOpen}, // 5: probe 2
		{at: time.Second, do: "allow", allow: false, state: BreakerHalfOpen, retryS: 0},
		{at: time.Second, do: "fail", ref: 1, state: BreakerHalfOpen},       // 7: stale, ignored
		{at: time.Second, do: "ignore", ref: 4, state: BreakerHalfOpen},     // 8: frees probe 1
		{at: time.Second, do: "allow", allow: true, state: BreakerHalfOpen}, // 9: probe 3
		{at: 2 * time.Second, do: "fail", ref: 5, state: BreakerOpen},       // 10: a probe fails: reopen
		{at: 2 * time.Second, do: "ok", ref: 9, state: BreakerOpen},         // 11: stale probe
		{at: 2500 * time.Millisecond, do: "allow", allow: false, state: BreakerOpen, retryS: 500 * time.Millisecond},
		{at: 3 * time.Second, do: "allow", allow: true, state: BreakerHalfOpen},             // 13
		{at: 3 * time.Second, do: "allow", allow: true, state: BreakerHalfOpen},             // 14
		{at: 3 * time.Second, do: "ok", ref: 13, state: BreakerHalfOpen},                    // 15: one of two probes succeeded
		{at: 3 * time.Second, do: "allow", allow: false, state: BreakerHalfOpen, retryS: 0}, // 16: both were let through
		{at: 3 * time.Second, do: "ok", ref: 14, state: BreakerClosed},                      // 17: both succeeded: close
		{at: 3 * time.Second, do: "allow", allow: true, state: BreakerClosed},               // 18
		{at: 3 * time.Second, do: "fail", ref: 18, state: BreakerOpen},                      // 19: fresh counts, 1 failure opens
	}
	runBreakerSteps(t, p, steps)
}

func TestBreakerClosesWithFreshCounts(t *testing.T) {
	// After closing, the failures from before the open are forgotten.
	p := BreakerParams{ConsecutiveFailures: 2, Cooldown: time.Second, MinRequests: 4, FailureRatio: 0.5, Probes: 1}
	steps := []breakerStep{
		{at: 0, do: "allow", allow: true, state: BreakerClosed},
		{at: 0, do: "fail", ref: 0, state: BreakerClosed},
		{at: 0, do: "allow", allow: true, state: BreakerClosed},
		{at: 0, do: "fail", ref: 2, state: BreakerOpen},
		{at: time.Second, do: "allow", allow: true, state: BreakerHalfOpen},
		{at: time.Second, do: "ok", ref: 4, state: BreakerClosed},
		{at: time.Second, do: "allow", allow: true, state: BreakerClosed},
		{at: time.Second, do: "fail", ref: 6, state: BreakerClosed}, // 1 failure of 1: below both triggers
		{at: time.Second, do: "allow", allow: true, state: BreakerClosed},
		{at: time.Second, do: "ok", ref: 8, state: BreakerClosed},
	}
	runBreakerSteps(t, p, steps)
}

func TestBreakerTriggersOff(t *testing.T) {
	// Consecutive failures off: 50 failures in a row open only by the ratio,
	// which needs MinRequests.
	p := BreakerParams{ConsecutiveFailures: -1, MinRequests: 50, FailureRatio: 0.5}
	steps := allowN(49, 0, "fail", 0, BreakerClosed)
	steps = append(steps, allowN(1, 0, "fail", len(steps), BreakerOpen)...)
	runBreakerSteps(t, p, steps)
	// The ratio off: only a run of failures opens it.
	p = BreakerParams{ConsecutiveFailures: 3, MinRequests: 1, FailureRatio: -1}
	steps = nil
	for i := 0; i < 10; i++ {
		steps = append(steps, allowN(2, 0, "fail", len(steps), BreakerClosed)...)
		steps = append(steps, allowN(1, 0, "ok", len(steps), BreakerClosed)...)
	}
	steps = append(steps, allowN(3, 0, "fail", len(steps), BreakerClosed)...)
	steps[len(steps)-1].state = BreakerOpen
	runBreakerSteps(t, p, steps)
}

func TestBreakerZeroPermitIsHarmless(t *testing.T) {
	b, err := NewBreaker(BreakerParams{ConsecutiveFailures: 1}, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The zero Permit belongs to no generation: recording it changes nothing.
	b.Record(Permit{}, gate.Dropped, t0)
	if b.State() != BreakerClosed {
		t.Fatalf("state %v after a zero Permit failed, want closed", b.State())
	}
	pm, _ := b.Allow(t0)
	b.Record(pm, gate.Dropped, t0)
	if b.State() != BreakerOpen {
		t.Fatalf("state %v, want open", b.State())
	}
	b.Record(Permit{}, gate.Success, t0)
	if b.State() != BreakerOpen {
		t.Fatalf("state %v after a zero Permit succeeded, want open", b.State())
	}
}

func TestBreakerTimeBeforeCreation(t *testing.T) {
	b, err := NewBreaker(BreakerParams{ConsecutiveFailures: 1, Cooldown: time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := b.Allow(t0.Add(-time.Hour))
	b.Record(pm, gate.Dropped, t0.Add(-time.Hour)) // counts as at t0
	if _, ok := b.Allow(t0.Add(999 * time.Millisecond)); ok {
		t.Fatal("allowed during the cooldown")
	}
	if _, ok := b.Allow(t0.Add(time.Second)); !ok {
		t.Fatal("refused after the cooldown")
	}
}

func TestBreakerParamsValidate(t *testing.T) {
	if err := (BreakerParams{}).Validate(); err != nil {
		t.Fatalf("zero params: %v", err)
	}
	bad := BreakerParams{Window: -1, Buckets: -2, MinRequests: -3, FailureRatio: 1.5, Cooldown: -5, Probes: -6}
	err := bad.Validate()
	if err == nil {
		t.Fatal("no error for bad params")
	}
	for _, want := range []string{"window", "buckets", "min requests", "failure ratio", "cooldown", "probes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !strings.HasPrefix(err.Error(), "proxy: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
	if err := (BreakerParams{FailureRatio: -1, ConsecutiveFailures: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "never opens") {
		t.Errorf("both triggers off: %v, want a breaker that never opens refused", err)
	}
	if err := (BreakerParams{Window: time.Nanosecond, Buckets: 10}).Validate(); err == nil {
		t.Error("no error for a window shorter than its buckets")
	}
	if _, err := NewBreaker(bad, t0); err == nil {
		t.Error("NewBreaker accepted bad params")
	}
}

func TestBreakerStateString(t *testing.T) {
	for s, want := range map[BreakerState]string{BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half_open", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

func BenchmarkBreakerAllowRecord(b *testing.B) {
	br, err := NewBreaker(BreakerParams{}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pm, ok := br.Allow(now)
			if !ok {
				b.Fatal("refused")
			}
			br.Record(pm, gate.Success, now)
		}
	})
}

func TestBreakerWindowSpansBuckets(t *testing.T) {
	// The counterpart of TestBreakerWindowRolls: 9.9 s later the t0 bucket still
	// counts, so 5+6 failures among 17 requests open the circuit.
	p := BreakerParams{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000, Window: 10 * time.Second, Buckets: 10}
	var steps []breakerStep
	for i := 0; i < 5; i++ {
		steps = append(steps, allowN(1, 0, "fail", len(steps), BreakerClosed)...)
		steps = append(steps, allowN(1, 0, "ok", len(steps), BreakerClosed)...)
	}
	at := 9900 * time.Millisecond
	steps = append(steps, allowN(1, at, "ok", len(steps), BreakerClosed)...)
	steps = append(steps, allowN(1, at, "fail", len(steps), BreakerClosed)...) // 12 requests, 6 failed: 50 %
	steps[len(steps)-1].state = BreakerOpen
	runBreakerSteps(t, p, steps)
}

// TestBreakerReportsChanges: every change of state reaches OnChange once, in
// order, with the instant and a reason; Status says the state, since when and
// why; OnChange may read the Breaker (it runs outside its lock).
func TestBreakerReportsChanges(t *testing.T) {
	var got []BreakerChange
	var b *Breaker
	p := BreakerParams{ConsecutiveFailures: 2, FailureRatio: -1, Cooldown: time.Second, Probes: 2,
		OnChange: func(c BreakerChange) {
			if st := b.Status(); st.State != c.To || !st.Since.Equal(c.At) || st.Reason != c.Reason {
				t.Errorf("in OnChange(%+v), Status = %+v", c, st)
			}
			got = append(got, c)
		}}
	b, err := NewBreaker(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Status(); st.State != BreakerClosed || !st.Since.Equal(t0) || st.Reason != "" {
		t.Fatalf("a new breaker: %+v", st)
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	fail := func(d time.Duration, cause string) {
		pm, ok := b.Allow(at(d))
		if !ok {
			t.Fatalf("refused at %v", d)
		}
		b.record(pm, gate.Dropped, at(d), cause)
	}
	fail(1*time.Second, "connect")
	fail(2*time.Second, "timeout") // opens
	if _, ok := b.Allow(at(2500 * time.Millisecond)); ok {
		t.Fatal("allowed while open")
	}
	p1, _ := b.Allow(at(3 * time.Second)) // half-open
	b.record(p1, gate.Dropped, at(3*time.Second), "reset")
	p2, _ := b.Allow(at(4 * time.Second)) // half-open again
	p3, _ := b.Allow(at(4 * time.Second))
	b.Record(p2, gate.Success, at(5*time.Second))
	b.Record(p3, gate.Success, at(6*time.Second)) // closes

	want := []BreakerChange{
		{BreakerClosed, BreakerOpen, at(2 * time.Second), "2 failures in a row (last: timeout)", 1},
		{BreakerOpen, BreakerHalfOpen, at(3 * time.Second), "cooldown of 1s over: 2 probes let through", 2},
		{BreakerHalfOpen, BreakerOpen, at(3 * time.Second), "a probe failed: reset", 3},
		{BreakerOpen, BreakerHalfOpen, at(4 * time.Second), "cooldown of 1s over: 2 probes let through", 4},
		{BreakerHalfOpen, BreakerClosed, at(6 * time.Second), "2 probes succeeded", 5},
	}
	if len(got) != len(want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if st := b.Status(); st.State != BreakerClosed || !st.Since.Equal(at(6*time.Second)) || st.Reason != "2 probes succeeded" {
		t.Errorf("Status = %+v", st)
	}
}

// TestBreakerRatioReason: a circuit opened by the failure ratio says so.
func TestBreakerRatioReason(t *testing.T) {
	b, err := NewBreaker(BreakerParams{ConsecutiveFailures: -1, FailureRatio: 0.5, MinRequests: 4, Window: 10 * time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range []gate.Outcome{gate.Success, gate.Dropped, gate.Success, gate.Dropped} {
		pm, _ := b.Allow(t0)
		b.record(pm, o, t0.Add(time.Duration(i)*time.Millisecond), "5xx response")
	}
	if st := b.Status(); st.State != BreakerOpen || st.Reason != "2 of 4 requests failed within 10s (last: 5xx response)" {
		t.Errorf("Status = %+v", st)
	}
}
