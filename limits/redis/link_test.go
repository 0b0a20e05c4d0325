package redis

import (
	"errors"
	"testing"
	"time"
)

// TestLink steps the breaker at fixed instants: three failures in a row
// take it down once nothing has succeeded for the quiet period, nothing
// reaches Redis before the backoff has passed, then exactly one probe does;
// failed probes double the pause up to its maximum, and a successful one
// brings the link back.
func TestLink(t *testing.T) {
	const ms = int64(time.Millisecond)
	boom := errors.New("dial tcp: connection refused")
	k := newLink(10*time.Millisecond, 40*time.Millisecond, 50*time.Millisecond, 0)
	now := int64(1_000) * ms

	mustRoute := func(step string, wantRedis, wantProbe bool) {
		t.Helper()
		if r, p := k.route(now); r != wantRedis || p != wantProbe {
			t.Fatalf("%s: route(t+%dms) = %v, %v; want %v, %v", step, now/ms-1000, r, p, wantRedis, wantProbe)
		}
	}
	pause := func() time.Duration { return time.Duration(k.retryAt.Load() - now) }
	inJitter := func(step string, d, base time.Duration) {
		t.Helper()
		if lo, hi := base*8/10, base*12/10; d < lo || d > hi {
			t.Fatalf("%s: pause %v, want %v ± 20%%", step, d, base)
		}
	}

	mustRoute("up", true, false)
	k.failed(now, false, boom)
	k.failed(now, false, boom)
	k.succeeded(now, false) // a success resets the count
	k.failed(now, false, boom)
	k.failed(now, false, boom)
	mustRoute("two failures in a row", true, false)
	now += 49 * ms
	k.failed(now, false, boom)
	k.failed(now, false, boom)
	mustRoute("failures, but a success 49ms ago: slow, not dead", true, false)
	now += ms
	k.failed(now, false, boom)
	if st := k.state(); !st.down || st.lastErr != boom.Error() || st.since != now {
		t.Fatalf("after three failures: %+v", st)
	}
	inJitter("first pause", pause(), 10*time.Millisecond)
	k.failed(now, false, boom) // a late failure changes nothing
	inJitter("late failure", pause(), 10*time.Millisecond)
	mustRoute("down, before the pause ends", false, false)

	for i, base := range []time.Duration{20, 40, 40} { // doubling, capped
		now = k.retryAt.Load()
		mustRoute("the probe", true, true)
		mustRoute("a second caller meanwhile", false, false)
		k.failed(now, true, boom)
		inJitter("after failed probe "+string(rune('1'+i)), pause(), base*time.Millisecond)
	}
	now = k.retryAt.Load()
	mustRoute("the probe", true, true)
	k.succeeded(now, true)
	if st := k.state(); st.down || st.since != now {
		t.Fatalf("after a successful probe: %+v", st)
	}
	mustRoute("up again", true, false)
	// Down again: the pause starts from the minimum.
	now += 50 * ms
	for range failThreshold {
		k.failed(now, false, boom)
	}
	inJitter("down again", pause(), 10*time.Millisecond)
}
