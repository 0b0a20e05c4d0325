package breaker

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
	do     string        // "allow", "ok", "fail", "ignore": record on the ticket of step ref
	ref    int           // for records: the index of the allow step whose ticket is recorded
	allow  bool          // for "allow": the wanted answer
	state  State         // the state after the step
	retryS time.Duration // for "allow" refused: the wanted RetryAfter (-1: don't check)
}

func runBreakerSteps(t *testing.T, p Params, steps []breakerStep) {
	t.Helper()
	b, err := New(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	tickets := make([]Ticket, len(steps))
	for i, s := range steps {
		now := t0.Add(s.at)
		switch s.do {
		case "allow":
			pm, ok := b.Allow(now)
			tickets[i] = pm
			if ok != s.allow {
				t.Fatalf("step %d: Allow(t0+%v) = %v, want %v", i, s.at, ok, s.allow)
			}
			if !ok && s.retryS >= 0 {
				if got := b.RetryAfter(now); got != s.retryS {
					t.Fatalf("step %d: RetryAfter(t0+%v) = %v, want %v", i, s.at, got, s.retryS)
				}
			}
		case "ok":
			b.Record(tickets[s.ref], gate.Success, now, "")
		case "fail":
			b.Record(tickets[s.ref], gate.Dropped, now, "")
		case "ignore":
			b.Record(tickets[s.ref], gate.Ignored, now, "")
		default:
			t.Fatalf("step %d: unknown action %q", i, s.do)
		}
		if got := b.State(); got != s.state {
			t.Fatalf("step %d (%s at t0+%v): state %v, want %v", i, s.do, s.at, got, s.state)
		}
	}
}

// allowN returns n steps that allow at `at` and then record each with do.
func allowN(n int, at time.Duration, do string, first int, state State) []breakerStep {
	var s []breakerStep
	for i := 0; i < n; i++ {
		s = append(s, breakerStep{at: at, do: "allow", allow: true, state: Closed, retryS: -1},
			breakerStep{at: at, do: do, ref: first + 2*i, state: state})
	}
	return s
}

func TestConsecutiveFailuresOpen(t *testing.T) {
	p := Params{ConsecutiveFailures: 3, MinRequests: 100, Cooldown: 5 * time.Second}
	steps := []breakerStep{
		{at: 0, do: "allow", allow: true, state: Closed},               // 0
		{at: 0, do: "fail", ref: 0, state: Closed},                     // 1
		{at: 0, do: "allow", allow: true, state: Closed},               // 2
		{at: 0, do: "fail", ref: 2, state: Closed},                     // 3
		{at: 0, do: "allow", allow: true, state: Closed},               // 4
		{at: 0, do: "ok", ref: 4, state: Closed},                       // 5: a success resets the run
		{at: 0, do: "allow", allow: true, state: Closed},               // 6
		{at: 0, do: "fail", ref: 6, state: Closed},                     // 7
		{at: 0, do: "allow", allow: true, state: Closed},               // 8
		{at: 0, do: "fail", ref: 8, state: Closed},                     // 9
		{at: 1 * time.Second, do: "allow", allow: true, state: Closed}, // 10
		{at: 1 * time.Second, do: "fail", ref: 10, state: Open},        // 11: third in a row
		{at: 1 * time.Second, do: "allow", allow: false, state: Open, retryS: 5 * time.Second},
		{at: 5999 * time.Millisecond, do: "allow", allow: false, state: Open, retryS: time.Millisecond},
	}
	runBreakerSteps(t, p, steps)
}

func TestRatioOpens(t *testing.T) {
	// 10 requests minimum, half failing opens; consecutive failures out of reach.
	p := Params{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000, Window: 10 * time.Second, Buckets: 10}
	var steps []breakerStep
	// 6 successes, then alternate failures: after 4 failures, 10 requests, 40 %.
	steps = append(steps, allowN(6, 0, "ok", 0, Closed)...)
	steps = append(steps, allowN(4, time.Second, "fail", len(steps), Closed)...)
	// The fifth failure: 11 requests, 5 failed = 45 %: still closed.
	steps = append(steps, allowN(1, time.Second, "fail", len(steps), Closed)...)
	// The sixth: 12 requests, 6 failed = 50 %: open.
	steps = append(steps, allowN(1, 2*time.Second, "fail", len(steps), Open)...)
	runBreakerSteps(t, p, steps)
}

func TestRatioNeedsMinRequests(t *testing.T) {
	p := Params{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000}
	// 9 failures out of 9: below the minimum, the circuit stays closed.
	steps := allowN(9, 0, "fail", 0, Closed)
	runBreakerSteps(t, p, steps)
}

func TestWindowRolls(t *testing.T) {
	p := Params{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000, Window: 10 * time.Second, Buckets: 10}
	var steps []breakerStep
	// 5 failures at t0, separated by successes so no run forms.
	for i := 0; i < 5; i++ {
		steps = append(steps, allowN(1, 0, "fail", len(steps), Closed)...)
		steps = append(steps, allowN(1, 0, "ok", len(steps), Closed)...)
	}
	// 10 s later the t0 bucket has left the window: 6 new failures among 7 is
	// below the minimum of 10 requests, so still closed...
	steps = append(steps, allowN(1, 10*time.Second, "ok", len(steps), Closed)...)
	steps = append(steps, allowN(6, 10*time.Second, "fail", len(steps), Closed)...)
	// ...had the old bucket counted, 17 requests with 11 failures would have opened it.
	runBreakerSteps(t, p, steps)
}

func TestHalfOpenProbes(t *testing.T) {
	p := Params{ConsecutiveFailures: 1, Cooldown: time.Second, Probes: 2}
	steps := []breakerStep{
		{at: 0, do: "allow", allow: true, state: Closed}, // 0
		{at: 0, do: "allow", allow: true, state: Closed}, // 1: in flight when it opens
		{at: 0, do: "fail", ref: 0, state: Open},         // 2
		{at: 500 * time.Millisecond, do: "allow", allow: false, state: Open, retryS: 500 * time.Millisecond},
		{at: time.Second, do: "allow", allow: true, state: HalfOpen}, // 4: probe 1
		{at: time.Second, do: "allow", allow: true, state: HalfOpen}, // 5: probe 2
		{at: time.Second, do: "allow", allow: false, state: HalfOpen, retryS: 0},
		{at: time.Second, do: "fail", ref: 1, state: HalfOpen},       // 7: stale, ignored
		{at: time.Second, do: "ignore", ref: 4, state: HalfOpen},     // 8: frees probe 1
		{at: time.Second, do: "allow", allow: true, state: HalfOpen}, // 9: probe 3
		{at: 2 * time.Second, do: "fail", ref: 5, state: Open},       // 10: a probe fails: reopen
		{at: 2 * time.Second, do: "ok", ref: 9, state: Open},         // 11: stale probe
		{at: 2500 * time.Millisecond, do: "allow", allow: false, state: Open, retryS: 500 * time.Millisecond},
		{at: 3 * time.Second, do: "allow", allow: true, state: HalfOpen},             // 13
		{at: 3 * time.Second, do: "allow", allow: true, state: HalfOpen},             // 14
		{at: 3 * time.Second, do: "ok", ref: 13, state: HalfOpen},                    // 15: one of two probes succeeded
		{at: 3 * time.Second, do: "allow", allow: false, state: HalfOpen, retryS: 0}, // 16: both were let through
		{at: 3 * time.Second, do: "ok", ref: 14, state: Closed},                      // 17: both succeeded: close
		{at: 3 * time.Second, do: "allow", allow: true, state: Closed},               // 18
		{at: 3 * time.Second, do: "fail", ref: 18, state: Open},                      // 19: fresh counts, 1 failure opens
	}
	runBreakerSteps(t, p, steps)
}

func TestClosesWithFreshCounts(t *testing.T) {
	// After closing, the failures from before the open are forgotten.
	p := Params{ConsecutiveFailures: 2, Cooldown: time.Second, MinRequests: 4, FailureRatio: 0.5, Probes: 1}
	steps := []breakerStep{
		{at: 0, do: "allow", allow: true, state: Closed},
		{at: 0, do: "fail", ref: 0, state: Closed},
		{at: 0, do: "allow", allow: true, state: Closed},
		{at: 0, do: "fail", ref: 2, state: Open},
		{at: time.Second, do: "allow", allow: true, state: HalfOpen},
		{at: time.Second, do: "ok", ref: 4, state: Closed},
		{at: time.Second, do: "allow", allow: true, state: Closed},
		{at: time.Second, do: "fail", ref: 6, state: Closed}, // 1 failure of 1: below both triggers
		{at: time.Second, do: "allow", allow: true, state: Closed},
		{at: time.Second, do: "ok", ref: 8, state: Closed},
	}
	runBreakerSteps(t, p, steps)
}

func TestTriggersOff(t *testing.T) {
	// Consecutive failures off: 50 failures in a row open only by the ratio,
	// which needs MinRequests.
	p := Params{ConsecutiveFailures: -1, MinRequests: 50, FailureRatio: 0.5}
	steps := allowN(49, 0, "fail", 0, Closed)
	steps = append(steps, allowN(1, 0, "fail", len(steps), Open)...)
	runBreakerSteps(t, p, steps)
	// The ratio off: only a run of failures opens it.
	p = Params{ConsecutiveFailures: 3, MinRequests: 1, FailureRatio: -1}
	steps = nil
	for i := 0; i < 10; i++ {
		steps = append(steps, allowN(2, 0, "fail", len(steps), Closed)...)
		steps = append(steps, allowN(1, 0, "ok", len(steps), Closed)...)
	}
	steps = append(steps, allowN(3, 0, "fail", len(steps), Closed)...)
	steps[len(steps)-1].state = Open
	runBreakerSteps(t, p, steps)
}

func TestZeroTicketIsHarmless(t *testing.T) {
	b, err := New(Params{ConsecutiveFailures: 1}, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The zero Ticket belongs to no generation: recording it changes nothing.
	b.Record(Ticket{}, gate.Dropped, t0, "")
	if b.State() != Closed {
		t.Fatalf("state %v after a zero Ticket failed, want closed", b.State())
	}
	pm, _ := b.Allow(t0)
	b.Record(pm, gate.Dropped, t0, "")
	if b.State() != Open {
		t.Fatalf("state %v, want open", b.State())
	}
	b.Record(Ticket{}, gate.Success, t0, "")
	if b.State() != Open {
		t.Fatalf("state %v after a zero Ticket succeeded, want open", b.State())
	}
}

func TestTimeBeforeCreation(t *testing.T) {
	b, err := New(Params{ConsecutiveFailures: 1, Cooldown: time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := b.Allow(t0.Add(-time.Hour))
	b.Record(pm, gate.Dropped, t0.Add(-time.Hour), "") // counts as at t0
	if _, ok := b.Allow(t0.Add(999 * time.Millisecond)); ok {
		t.Fatal("allowed during the cooldown")
	}
	if _, ok := b.Allow(t0.Add(time.Second)); !ok {
		t.Fatal("refused after the cooldown")
	}
}

func TestParamsValidate(t *testing.T) {
	if err := (Params{}).Validate(); err != nil {
		t.Fatalf("zero params: %v", err)
	}
	bad := Params{Window: -1, Buckets: -2, MinRequests: -3, FailureRatio: 1.5, Cooldown: -5, Probes: -6}
	err := bad.Validate()
	if err == nil {
		t.Fatal("no error for bad params")
	}
	for _, want := range []string{"window", "buckets", "min requests", "failure ratio", "cooldown", "probes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !strings.HasPrefix(err.Error(), "breaker: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
	if err := (Params{FailureRatio: -1, ConsecutiveFailures: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "never opens") {
		t.Errorf("both triggers off: %v, want a breaker that never opens refused", err)
	}
	if err := (Params{Window: time.Nanosecond, Buckets: 10}).Validate(); err == nil {
		t.Error("no error for a window shorter than its buckets")
	}
	if _, err := New(bad, t0); err == nil {
		t.Error("New accepted bad params")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

func BenchmarkAllowRecord(b *testing.B) {
	br, err := New(Params{}, time.Now())
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
			br.Record(pm, gate.Success, now, "")
		}
	})
}

func TestWindowSpansBuckets(t *testing.T) {
	// The counterpart of TestBreakerWindowRolls: 9.9 s later the t0 bucket still
	// counts, so 5+6 failures among 17 requests open the circuit.
	p := Params{MinRequests: 10, FailureRatio: 0.5, ConsecutiveFailures: 1000, Window: 10 * time.Second, Buckets: 10}
	var steps []breakerStep
	for i := 0; i < 5; i++ {
		steps = append(steps, allowN(1, 0, "fail", len(steps), Closed)...)
		steps = append(steps, allowN(1, 0, "ok", len(steps), Closed)...)
	}
	at := 9900 * time.Millisecond
	steps = append(steps, allowN(1, at, "ok", len(steps), Closed)...)
	steps = append(steps, allowN(1, at, "fail", len(steps), Closed)...) // 12 requests, 6 failed: 50 %
	steps[len(steps)-1].state = Open
	runBreakerSteps(t, p, steps)
}

// TestBreakerReportsChanges: every change of state reaches OnChange once, in
// order, with the instant and a reason; Status says the state, since when and
// why; OnChange may read the Breaker (it runs outside its lock).
func TestReportsChanges(t *testing.T) {
	var got []Change
	var b *Breaker
	p := Params{ConsecutiveFailures: 2, FailureRatio: -1, Cooldown: time.Second, Probes: 2,
		OnChange: func(c Change) {
			if st := b.Status(); st.State != c.To || !st.Since.Equal(c.At) || st.Reason != c.Reason {
				t.Errorf("in OnChange(%+v), Status = %+v", c, st)
			}
			got = append(got, c)
		}}
	b, err := New(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Status(); st.State != Closed || !st.Since.Equal(t0) || st.Reason != "" {
		t.Fatalf("a new breaker: %+v", st)
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	fail := func(d time.Duration, cause string) {
		pm, ok := b.Allow(at(d))
		if !ok {
			t.Fatalf("refused at %v", d)
		}
		b.Record(pm, gate.Dropped, at(d), cause)
	}
	fail(1*time.Second, "connect")
	fail(2*time.Second, "timeout") // opens
	if _, ok := b.Allow(at(2500 * time.Millisecond)); ok {
		t.Fatal("allowed while open")
	}
	p1, _ := b.Allow(at(3 * time.Second)) // half-open
	b.Record(p1, gate.Dropped, at(3*time.Second), "reset")
	p2, _ := b.Allow(at(4 * time.Second)) // half-open again
	p3, _ := b.Allow(at(4 * time.Second))
	b.Record(p2, gate.Success, at(5*time.Second), "")
	b.Record(p3, gate.Success, at(6*time.Second), "") // closes

	want := []Change{
		{Closed, Open, at(2 * time.Second), "2 failures in a row (last: timeout)", 1},
		{Open, HalfOpen, at(3 * time.Second), "cooldown of 1s over: 2 probes let through", 2},
		{HalfOpen, Open, at(3 * time.Second), "a probe failed: reset", 3},
		{Open, HalfOpen, at(4 * time.Second), "cooldown of 1s over: 2 probes let through", 4},
		{HalfOpen, Closed, at(6 * time.Second), "2 probes succeeded", 5},
	}
	if len(got) != len(want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if st := b.Status(); st.State != Closed || !st.Since.Equal(at(6*time.Second)) || st.Reason != "2 probes succeeded" {
		t.Errorf("Status = %+v", st)
	}
}

// TestBreakerRatioReason: a circuit opened by the failure ratio says so.
func TestRatioReason(t *testing.T) {
	b, err := New(Params{ConsecutiveFailures: -1, FailureRatio: 0.5, MinRequests: 4, Window: 10 * time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range []gate.Outcome{gate.Success, gate.Dropped, gate.Success, gate.Dropped} {
		pm, _ := b.Allow(t0)
		b.Record(pm, o, t0.Add(time.Duration(i)*time.Millisecond), "5xx response")
	}
	if st := b.Status(); st.State != Open || st.Reason != "2 of 4 requests failed within 10s (last: 5xx response)" {
		t.Errorf("Status = %+v", st)
	}
}
