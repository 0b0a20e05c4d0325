package probe

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWindowRotation drives one recorder through time with injected
// instants: a 1 s window of four 250 ms sub-windows and a 2 s min-RTT window.
// Each step records, then snapshots at t0+at and checks what the window holds.
func TestWindowRotation(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := mustRecorder(t, RecorderParams{
		Window: time.Second, SubWindows: 4, MinRTTWindow: 2 * time.Second, Start: t0,
	})
	ms := time.Millisecond
	type want struct {
		successes, drops, ignored uint64
		span                      time.Duration
		min, max, minRTT          time.Duration
		inflight                  int
	}
	steps := []struct {
		note   string
		record func()
		at     time.Duration
		want   want
	}{
		{"ten 10ms samples in sub-window 0", func() {
			for range 10 {
				rec.Record(10 * ms)
			}
			rec.ObserveInflight(7)
			rec.ObserveInflight(3)
		}, 100 * ms, want{successes: 10, span: 100 * ms, min: 10 * ms, max: 10 * ms, minRTT: 10 * ms, inflight: 7}},

		{"five 20ms samples and a drop in sub-window 1", func() {
			for range 5 {
				rec.Record(20 * ms)
			}
			rec.Drop()
		}, 300 * ms, want{successes: 15, drops: 1, span: 300 * ms, min: 10 * ms, max: 20 * ms, minRTT: 10 * ms, inflight: 7}},

		{"nothing new; still inside the first second", nil,
			999 * ms, want{successes: 15, drops: 1, span: 999 * ms, min: 10 * ms, max: 20 * ms, minRTT: 10 * ms, inflight: 7}},

		{"sub-window 0 slides out at 1s", func() { rec.Ignore() },
			1100 * ms, want{successes: 5, drops: 1, ignored: 1, span: 850 * ms, min: 20 * ms, max: 20 * ms, minRTT: 10 * ms}},

		{"sub-window 1 slides out; min RTT remembers 10ms", nil,
			1300 * ms, want{ignored: 1, span: 800 * ms, minRTT: 10 * ms}},

		{"a time earlier than the last one changes nothing", nil,
			1200 * ms, want{ignored: 1, span: 800 * ms, minRTT: 10 * ms}},

		{"sub-window 0 leaves the 2s min-RTT window", func() { rec.Record(30 * ms) },
			2100 * ms, want{successes: 1, span: 850 * ms, min: 30 * ms, max: 30 * ms, minRTT: 20 * ms}},

		{"a gap longer than both windows empties everything", nil,
			time.Hour, want{span: 750 * ms}},
	}
	for i, st := range steps {
		if st.record != nil {
			st.record()
		}
		s := rec.Snapshot(t0.Add(st.at))
		got := want{s.Successes, s.Drops, s.Ignored, s.Span, s.Min, s.Max, s.MinRTT, s.MaxInflight}
		if got != st.want {
			t.Fatalf("step %d (%s), Snapshot(t0+%v):\n got %+v\nwant %+v", i, st.note, st.at, got, st.want)
		}
		if s.Count != s.Successes+s.Drops+s.Ignored {
			t.Fatalf("step %d: count %d != %d+%d+%d", i, s.Count, s.Successes, s.Drops, s.Ignored)
		}
		if wantTP := float64(s.Count) / s.Span.Seconds(); s.Throughput != wantTP {
			t.Fatalf("step %d: throughput %v, want %v", i, s.Throughput, wantTP)
		}
	}
}

// TestWindowQuantilesFollowRotation checks that the histogram slides with
// the counts: once the slow samples leave the window, P99 drops to the fast.
func TestWindowQuantilesFollowRotation(t *testing.T) {
	t0 := time.Unix(0, 0)
	rec := mustRecorder(t, RecorderParams{Window: time.Second, SubWindows: 2, Start: t0})
	for range 100 {
		rec.Record(500 * time.Millisecond)
	}
	if s := rec.Snapshot(t0); s.P99 != 500*time.Millisecond {
		t.Fatalf("P99 = %v, want 500ms", s.P99)
	}
	for range 100 {
		rec.Record(time.Millisecond)
	}
	// Snapshots more often than sub-windows: the second drain merges into
	// the same sub-window.
	rec.Snapshot(t0.Add(600 * time.Millisecond))
	for range 100 {
		rec.Record(2 * time.Millisecond)
	}
	s := rec.Snapshot(t0.Add(700 * time.Millisecond))
	if s.Successes != 300 || !near(s.P50, 2*time.Millisecond) || s.P99 != 500*time.Millisecond {
		t.Fatalf("before sliding: successes %d P50 %v P99 %v, want 300 2ms 500ms", s.Successes, s.P50, s.P99)
	}
	s = rec.Snapshot(t0.Add(1100 * time.Millisecond))
	if s.Successes != 200 || s.P99 != 2*time.Millisecond || s.Max != 2*time.Millisecond {
		t.Fatalf("after sliding: successes %d P99 %v max %v, want 200 2ms 2ms", s.Successes, s.P99, s.Max)
	}
	if got := rec.Quantile(0.25); !near(got, time.Millisecond) {
		t.Fatalf("Quantile(0.25) = %v, want 1ms", got)
	}
}

// near reports whether got is within the histogram's 1/128 of want.
func near(got, want time.Duration) bool {
	d := got - want
	return max(d, -d) <= want/128
}

// TestStartDefaultsToFirstSnapshot: with no Start, the first Snapshot opens
// sub-window 0 and the span is measured from it.
func TestStartDefaultsToFirstSnapshot(t *testing.T) {
	rec := mustRecorder(t, RecorderParams{Window: time.Second, SubWindows: 4})
	t0 := time.Unix(50, 0)
	rec.Record(time.Millisecond)
	if s := rec.Snapshot(t0); s.Span != 0 || s.Throughput != 0 || s.Successes != 1 {
		t.Fatalf("first snapshot: span %v throughput %v successes %d, want 0 0 1", s.Span, s.Throughput, s.Successes)
	}
	if s := rec.Snapshot(t0.Add(500 * time.Millisecond)); s.Span != 500*time.Millisecond || s.Throughput != 2 {
		t.Fatalf("second snapshot: span %v throughput %v, want 500ms 2/s", s.Span, s.Throughput)
	}
}

// TestConcurrentRecordingLosesNothing records from many goroutines while
// the control loop drains; every sample must be counted exactly once.
func TestConcurrentRecordingLosesNothing(t *testing.T) {
	const goroutines, each = 8, 20_000
	t0 := time.Unix(0, 0)
	rec := mustRecorder(t, RecorderParams{Window: time.Hour, SubWindows: 4, Start: t0})
	var wg sync.WaitGroup
	stop, done := make(chan struct{}), make(chan struct{})
	var drains int
	go func() { // the control loop, draining as fast as it can
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec.Snapshot(t0)
			drains++
		}
	}()
	wg.Add(goroutines)
	for g := range goroutines {
		go func() {
			defer wg.Done()
			for i := range each {
				rec.Record(time.Duration(g*each+i+1) * time.Microsecond)
				if i%100 == 0 {
					rec.Drop()
					rec.ObserveInflight(g*each + i)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	s := rec.Snapshot(t0)
	const n = goroutines * each
	if s.Successes != n || s.Drops != n/100 {
		t.Fatalf("successes %d drops %d, want %d %d (after %d concurrent drains)", s.Successes, s.Drops, n, n/100, drains)
	}
	if want := time.Duration(n*(n+1)/2) * time.Microsecond / n; s.Mean != want {
		t.Errorf("mean %v, want %v", s.Mean, want)
	}
	if s.Min != time.Microsecond || s.Max != n*time.Microsecond {
		t.Errorf("min/max %v/%v, want 1µs/%v", s.Min, s.Max, n*time.Microsecond)
	}
	if want := (goroutines-1)*each + each - 100; s.MaxInflight != want {
		t.Errorf("max in-flight %d, want %d", s.MaxInflight, want)
	}
}

// TestHotPathAndSnapshotDoNotAllocate: Record and friends never allocate;
// Snapshot does not once its buffers have grown to the traffic.
func TestHotPathAndSnapshotDoNotAllocate(t *testing.T) {
	rec := mustRecorder(t, RecorderParams{})
	ds := latencies(3, 4096)
	if a := testing.AllocsPerRun(1000, func() {
		rec.Record(ds[0])
		rec.Drop()
		rec.Ignore()
		rec.ObserveInflight(5)
	}); a != 0 {
		t.Fatalf("hot path allocates %v per call", a)
	}
	now := time.Unix(0, 0)
	tick := func() {
		for _, d := range ds {
			rec.Record(d)
		}
		now = now.Add(250 * time.Millisecond)
		rec.Snapshot(now)
		rec.Quantile(0.999)
	}
	for range 100 { // warm up: let every sub-window's buffer grow once
		tick()
	}
	if a := testing.AllocsPerRun(100, tick); a != 0 {
		t.Fatalf("steady-state Snapshot allocates %v per tick", a)
	}
}

func TestRecorderParamsValidate(t *testing.T) {
	if err := (RecorderParams{}).Validate(); err != nil {
		t.Fatalf("zero params: %v", err)
	}
	err := RecorderParams{
		Window: -time.Second, SubWindows: -1, MinRTTWindow: -time.Second, Stripes: 100000,
	}.Validate()
	if err == nil {
		t.Fatal("bad params accepted")
	}
	for _, want := range []string{"window must be positive", "sub-windows must be in", "min RTT window", "stripes must be in"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 4 {
		t.Errorf("got %d problems, want 4: %v", n, err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "probe: ") {
			t.Errorf("error %q is not prefixed with the package", line)
		}
	}
	if _, err := NewRecorder(RecorderParams{Window: time.Second, SubWindows: 5000}); err == nil || !strings.Contains(err.Error(), "shorter than 1ms") {
		t.Errorf("200µs sub-windows: err = %v, want a sub-window length error", err)
	}
	if _, err := NewRecorder(RecorderParams{Window: time.Second, MinRTTWindow: 500 * time.Millisecond}); err == nil {
		t.Error("min RTT window shorter than the window accepted")
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Errorf("Validate should join its errors, got %T", err)
	}
}
