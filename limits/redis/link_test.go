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

// TestLinkRouteEvery: a caller that probes every period (a lease renewer)
// probes a down link once that period has passed since the last probe,
// whatever the backoff (here 40ms, against a period of 10ms), while the
// other callers still wait for the backoff; one probe at a time.
func TestLinkRouteEvery(t *testing.T) {
	const ms = int64(time.Millisecond)
	boom := errors.New("dial tcp: connection refused")
	k := newLink(40*time.Millisecond, 40*time.Millisecond, 0, 0)
	now := int64(1_000) * ms
	k.failedHard(now, false, boom)
	check := func(step string, every time.Duration, wantRedis, wantProbe bool) {
		t.Helper()
		if r, p := k.routeEvery(now, every); r != wantRedis || p != wantProbe {
			t.Fatalf("%s: routeEvery(t+%dms, %v) = %v, %v; want %v, %v", step, now/ms-1000, every, r, p, wantRedis, wantProbe)
		}
	}
	check("down, a renewer's first round", 10*time.Millisecond, true, true)
	check("a second caller while it probes", 10*time.Millisecond, false, false)
	k.failedHard(now, true, boom)
	now += 9 * ms
	check("9ms after the last probe", 10*time.Millisecond, false, false)
	now += ms
	check("within the backoff, by the backoff only", 0, false, false)
	check("a period after the last probe", 10*time.Millisecond, true, true)
	k.failedHard(now, true, boom)
	if k.retryAt.Load()-now < 32*ms {
		t.Fatalf("a renewer's failed probe: the others' pause %v, want the backoff (40ms ± 20 %%)", time.Duration(k.retryAt.Load()-now))
	}
	now += 10 * ms
	check("the next period", 10*time.Millisecond, true, true)
	k.succeeded(now, true)
	check("up again", 10*time.Millisecond, true, false)
}
