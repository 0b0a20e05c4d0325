package permit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
)

func TestGrantAndRelease(t *testing.T) {
	e := newEnv(t, jobs(2), permit.Params{})
	g := e.grant(t, permit.Request{Group: "jobs", Key: "t1"})
	if g.Group != "jobs" || g.Lease != permit.DefaultLease {
		t.Fatalf("grant %+v, want group jobs, lease %v", g, permit.DefaultLease)
	}
	if n := e.inFlight(t, "jobs"); n != 1 {
		t.Fatalf("in flight %d after a grant, want 1", n)
	}
	r, err := e.svc.Release(g.ID, gate.Success, 42*time.Millisecond)
	if err != nil || r != permit.Released {
		t.Fatalf("Release: %v %v, want released", r, err)
	}
	if n := e.inFlight(t, "jobs"); n != 0 {
		t.Fatalf("in flight %d after the release, want 0", n)
	}
	if got := e.obs.latencies(); len(got) != 1 || got[0] != 42*time.Millisecond {
		t.Fatalf("latencies seen by the gate %v, want [42ms] (the caller's)", got)
	}
	// A second release frees nothing.
	if r, err := e.svc.Release(g.ID, gate.Success, time.Millisecond); err != nil || r != permit.AlreadyReleased {
		t.Fatalf("second Release: %v %v, want already_released", r, err)
	}
	if n := e.obs.count(gate.Success); n != 1 {
		t.Fatalf("the gate saw %d successes, want 1", n)
	}
}

func TestUnmeasuredLatencyIsTheLeaseHeld(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	g := e.grant(t, permit.Request{Group: "jobs"})
	e.clock.Advance(1500 * time.Millisecond)
	if r, err := e.svc.Release(g.ID, gate.Success, permit.Unmeasured); err != nil || r != permit.Released {
		t.Fatalf("Release: %v %v", r, err)
	}
	if got := e.obs.latencies(); len(got) != 1 || got[0] != 1500*time.Millisecond {
		t.Fatalf("latency %v, want [1.5s]: from the grant to the release on the service's clock", got)
	}
}

func TestConcurrencyRefusalCarriesTheReason(t *testing.T) {
	e := newEnv(t, jobs(2), permit.Params{})
	e.grant(t, permit.Request{Group: "jobs"})
	e.grant(t, permit.Request{Group: "jobs"})
	_, rej, err := e.svc.Acquire(context.Background(), permit.Request{Group: "jobs"})
	if err != nil || rej.Reason != adaptive.RejectConcurrency || rej.Status() != 503 || rej.Group != "jobs" {
		t.Fatalf("third Acquire: %+v %v, want a concurrency refusal (503) of jobs", rej, err)
	}
	st := e.svc.Stats()
	if len(st.Groups) != 1 || st.Groups[0].Granted != 2 || st.Groups[0].Refused[adaptive.RejectConcurrency] != 1 || st.Live != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLeaseExpiryFreesTheSlot(t *testing.T) {
	e := newEnv(t, jobs(2), permit.Params{Leases: permit.Leases{Groups: map[string]time.Duration{"jobs": 5 * time.Second}}})
	a := e.grant(t, permit.Request{Group: "jobs"})
	e.clock.Advance(2 * time.Second)
	b := e.grant(t, permit.Request{Group: "jobs"})
	if a.Lease != 5*time.Second {
		t.Fatalf("lease %v, want the group's 5s", a.Lease)
	}

	// At 4.999s nothing has expired yet.
	if n := e.svc.Sweep(e.clock.Advance(2999 * time.Millisecond)); n != 0 {
		t.Fatalf("Sweep at 4.999s took %d leases, want 0", n)
	}
	// At 5s the first lease ends: its slot returns, counted as expired and
	// to the gate as ignored (no drop of the service's).
	if n := e.svc.Sweep(e.clock.Advance(time.Millisecond)); n != 1 {
		t.Fatalf("Sweep at 5s took %d leases, want 1", n)
	}
	if n := e.inFlight(t, "jobs"); n != 1 {
		t.Fatalf("in flight %d, want 1 (b)", n)
	}
	if n := e.obs.count(gate.Ignored); n != 1 || e.obs.count(gate.Dropped) != 0 {
		t.Fatalf("the gate saw %d ignored, %d drops; want 1 ignored", n, e.obs.count(gate.Dropped))
	}
	// The slot is free for another permit, and a's late release frees
	// nothing: not the new permit's slot, not b's.
	c := e.grant(t, permit.Request{Group: "jobs"})
	if r, err := e.svc.Release(a.ID, gate.Success, time.Millisecond); err != nil || r != permit.Expired {
		t.Fatalf("late Release: %v %v, want expired", r, err)
	}
	if n := e.inFlight(t, "jobs"); n != 2 {
		t.Fatalf("in flight %d after the late release, want 2 (b and c)", n)
	}
	for _, g := range []permit.Grant{b, c} {
		if r, err := e.svc.Release(g.ID, gate.Success, time.Millisecond); err != nil || r != permit.Released {
			t.Fatalf("Release(%v): %v %v", g.ID, r, err)
		}
	}
	st := e.svc.Stats().Groups[0]
	if st.Expired != 1 || st.Late != 1 || st.Released[gate.Success] != 2 || st.Granted != 3 {
		t.Fatalf("stats %+v", st)
	}
	if n := e.obs.count(gate.Ignored) + e.obs.count(gate.Success); n != 3 {
		t.Fatalf("the gate saw %d finished passes, want 3: each exactly once", n)
	}
}

func TestReleaseAfterExpiryBeforeTheSweep(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{Leases: permit.Leases{Default: time.Second}})
	g := e.grant(t, permit.Request{Group: "jobs"})
	e.clock.Advance(time.Second)
	if r, err := e.svc.Release(g.ID, gate.Success, time.Millisecond); err != nil || r != permit.Expired {
		t.Fatalf("Release at expiry: %v %v, want expired", r, err)
	}
	if n := e.obs.count(gate.Ignored); n != 1 || e.obs.count(gate.Success) != 0 {
		t.Fatalf("the gate saw %v, want one ignored: an expired lease is expired whatever its holder says", e.obs.done)
	}
	if n := e.svc.Sweep(e.clock.Advance(time.Hour)); n != 0 {
		t.Fatalf("Sweep took %d leases after the release, want 0", n)
	}
	if n := e.inFlight(t, "jobs"); n != 0 {
		t.Fatalf("in flight %d, want 0", n)
	}
	if r, _ := e.svc.Release(g.ID, gate.Success, time.Millisecond); r != permit.Expired {
		t.Fatalf("repeated late Release: %v, want expired", r)
	}
}

func TestSetLeasesAppliesToLaterGrants(t *testing.T) {
	e := newEnv(t, jobs(4), permit.Params{})
	a := e.grant(t, permit.Request{Group: "jobs"})
	if err := e.svc.SetLeases(permit.Leases{Default: 2 * time.Second, Groups: map[string]time.Duration{"other": time.Minute}}); err != nil {
		t.Fatal(err)
	}
	b := e.grant(t, permit.Request{Group: "jobs"})
	if a.Lease != permit.DefaultLease || b.Lease != 2*time.Second || e.svc.LeaseOf("other") != time.Minute {
		t.Fatalf("leases %v then %v, other %v", a.Lease, b.Lease, e.svc.LeaseOf("other"))
	}
	if n := e.svc.Sweep(e.clock.Advance(2 * time.Second)); n != 1 {
		t.Fatalf("Sweep at 2s took %d, want b only", n)
	}
	err := e.svc.SetLeases(permit.Leases{Default: -time.Second, Groups: map[string]time.Duration{"a": 0, "b": 48 * time.Hour}})
	if err == nil || !contains(err.Error(), "default lease", `group "a"`, `group "b"`) {
		t.Fatalf("SetLeases of bad leases: %v, want every problem named", err)
	}
}

func TestRateRefusalCarriesRateLimitFigures(t *testing.T) {
	e := newEnv(t, `
[[group]]
name = "api"
  [group.rate]
  algorithm = "fixed_window"
  limit = 2
  window = "1s"
`, permit.Params{})
	e.grant(t, permit.Request{Group: "api"})
	e.grant(t, permit.Request{Group: "api"})
	_, rej, err := e.svc.Acquire(context.Background(), permit.Request{Group: "api"})
	if err != nil || rej.Reason != adaptive.RejectRate || rej.Status() != 429 || rej.Policy.Quota != 2 {
		t.Fatalf("third Acquire: %+v %v, want a rate refusal with the quota", rej, err)
	}
	// The next window admits again (the gate's clock).
	e.gclk.Advance(time.Second)
	e.grant(t, permit.Request{Group: "api"})
}

func TestCostSpendsRateUnitsAndOneSlot(t *testing.T) {
	e := newEnv(t, `
[[group]]
name = "bulk"
  [group.concurrency]
  law = "fixed"
  limit = 10
  [group.rate]
  algorithm = "fixed_window"
  limit = 10
  window = "1s"
`, permit.Params{})
	e.grant(t, permit.Request{Group: "bulk", Cost: 7})
	if n := e.inFlight(t, "bulk"); n != 1 {
		t.Fatalf("in flight %d for a permit of cost 7, want 1 slot", n)
	}
	_, rej, _ := e.svc.Acquire(context.Background(), permit.Request{Group: "bulk", Cost: 4})
	if rej.Reason != adaptive.RejectRate {
		t.Fatalf("cost 4 after 7 of 10: %v, want rate", rej.Reason)
	}
	e.grant(t, permit.Request{Group: "bulk", Cost: 3})
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	for _, c := range []struct {
		r     permit.Request
		field string
	}{
		{permit.Request{}, "group"},
		{permit.Request{Group: "jobs", Cost: -1}, "cost"},
		{permit.Request{Group: "jobs", Wait: -time.Second}, "wait_ms"},
		{permit.Request{Group: "jobs", Wait: 2 * time.Hour}, "wait_ms"},
		{permit.Request{Group: "jobs", Priority: 8}, "priority"},
	} {
		_, _, err := e.svc.Acquire(context.Background(), c.r)
		var fe *permit.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, permit.ErrInvalid) {
			t.Errorf("Acquire(%+v): %v, want a FieldError of %s", c.r, err, c.field)
		}
	}
	if _, _, err := e.svc.Acquire(context.Background(), permit.Request{Group: "nope"}); !errors.Is(err, permit.ErrNoGroup) {
		t.Errorf("unknown group: %v, want ErrNoGroup", err)
	}
	if _, err := e.svc.Release(1, gate.Outcome(9), 0); !errors.Is(err, permit.ErrInvalid) {
		t.Errorf("Release with outcome 9: %v, want ErrInvalid", err)
	}
	for _, id := range []permit.ID{0, 1<<32 | 5, 1<<63 | 1<<40} {
		if r, err := e.svc.Release(id, gate.Success, 0); r != permit.Unknown || err != nil {
			t.Errorf("Release(%v) of a permit never granted: %v %v, want unknown", id, r, err)
		}
	}
	if e.inFlight(t, "jobs") != 0 {
		t.Fatal("a bad request holds a slot")
	}
}

func TestFullTableRefusesAsConcurrency(t *testing.T) {
	e := newEnv(t, jobs(10), permit.Params{MaxLeases: 3})
	for range 3 {
		e.grant(t, permit.Request{Group: "jobs"})
	}
	_, rej, err := e.svc.Acquire(context.Background(), permit.Request{Group: "jobs"})
	if err != nil || rej.Reason != adaptive.RejectConcurrency {
		t.Fatalf("Acquire beyond MaxLeases: %v %v, want a concurrency refusal", rej.Reason, err)
	}
	if st, _ := e.gate.Group("jobs"); st.Rejected[adaptive.RejectConcurrency] != 1 || st.InFlight != 3 {
		t.Fatalf("gate: rejected %v, in flight %d: the refusal must count in the group and hold no slot", st.Rejected, st.InFlight)
	}
	if st := e.svc.Stats(); st.Full != 1 || st.Capacity != 3 || st.Live != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestQueuedRequestIsGrantedOnRelease(t *testing.T) {
	e := newEnv(t, queued(1, 4), permit.Params{})
	first := e.grant(t, permit.Request{Group: "jobs"})
	got := make(chan error, 1)
	go func() {
		_, rej, err := e.svc.Acquire(context.Background(), permit.Request{Group: "jobs", Wait: 10 * time.Second})
		if err == nil && rej.Rejected() {
			err = errors.New(rej.Reason.String())
		}
		got <- err
	}()
	waitFor(t, "the second request to queue", func() bool { s, _ := e.gate.Group("jobs"); return s.Queued == 1 })
	if _, err := e.svc.Release(first.ID, gate.Success, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("queued Acquire: %v, want a grant once the first is released", err)
	}
}

func TestCanceledWaiterIsCountedApart(t *testing.T) {
	e := newEnv(t, queued(1, 4), permit.Params{})
	e.grant(t, permit.Request{Group: "jobs"})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan gate.Rejection, 1)
	go func() {
		_, rej, _ := e.svc.Acquire(ctx, permit.Request{Group: "jobs"})
		got <- rej
	}()
	waitFor(t, "the second request to queue", func() bool { s, _ := e.gate.Group("jobs"); return s.Queued == 1 })
	cancel()
	if rej := <-got; !rej.Rejected() {
		t.Fatal("a cancelled waiter was granted")
	}
	if st := e.svc.Stats().Groups[0]; st.Canceled != 1 || st.Refused[adaptive.RejectQueueTimeout] != 0 {
		t.Fatalf("stats %+v: a caller that went away is canceled, not refused", st)
	}
}

func TestStopEndsEveryPermit(t *testing.T) {
	e := newEnv(t, jobs(3), permit.Params{})
	g := e.grant(t, permit.Request{Group: "jobs"})
	e.grant(t, permit.Request{Group: "jobs"})
	if n := e.svc.Stop(); n != 2 {
		t.Fatalf("Stop ended %d permits, want 2", n)
	}
	if n := e.inFlight(t, "jobs"); n != 0 || e.obs.count(gate.Ignored) != 2 {
		t.Fatalf("in flight %d, ignored %d after Stop", n, e.obs.count(gate.Ignored))
	}
	if _, _, err := e.svc.Acquire(context.Background(), permit.Request{Group: "jobs"}); !errors.Is(err, permit.ErrClosed) {
		t.Fatalf("Acquire after Stop: %v, want ErrClosed", err)
	}
	if r, _ := e.svc.Release(g.ID, gate.Success, 0); r != permit.Expired {
		t.Fatalf("Release after Stop: %v, want expired", r)
	}
}

func TestRunSweepsOnTheServiceClock(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{Leases: permit.Leases{Default: time.Second}, SweepEvery: time.Millisecond})
	e.grant(t, permit.Request{Group: "jobs"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.svc.Run(ctx) }()
	// Run's ticks come and go on the real clock; the lease ends when the
	// service's clock says so.
	e.clock.Advance(time.Second)
	waitFor(t, "the sweeper to take the lease back", func() bool { return e.inFlight(t, "jobs") == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestParams(t *testing.T) {
	if _, err := permit.New(permit.Params{}); err == nil {
		t.Error("New without a gate succeeded")
	}
	e := newEnv(t, jobs(1), permit.Params{})
	for _, p := range []permit.Params{
		{Gate: e.gate, MaxLeases: -1},
		{Gate: e.gate, MaxLeases: permit.MaxLeases + 1},
		{Gate: e.gate, SweepEvery: -time.Second},
		{Gate: e.gate, Leases: permit.Leases{Default: time.Microsecond}},
	} {
		if _, err := permit.New(p); err == nil {
			t.Errorf("New(%+v) succeeded", p)
		}
	}
}

func TestIDText(t *testing.T) {
	for _, id := range []permit.ID{0, 1, 0xdeadbeef00000007, 1<<64 - 1} {
		s := id.String()
		got, err := permit.ParseID(s)
		if err != nil || got != id || len(s) != 16 {
			t.Errorf("ParseID(%q) = %v, %v; want %v", s, got, err, id)
		}
	}
	for _, s := range []string{"", "123", "00000000000000zz", "+000000000000001", "00000000000000001"} {
		if _, err := permit.ParseID(s); err == nil {
			t.Errorf("ParseID(%q) succeeded", s)
		}
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestGrantDoesNotAllocate(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	ctx := context.Background()
	r := permit.Request{Group: "jobs", Key: "k"}
	e.svc.Release(e.grant(t, r).ID, gate.Success, 0) // the group's entry is made on its first request
	allocs := testing.AllocsPerRun(1000, func() {
		g, _, err := e.svc.Acquire(ctx, r)
		if err != nil {
			panic(err)
		}
		if res, _ := e.svc.Release(g.ID, gate.Success, time.Millisecond); res != permit.Released {
			panic(res.String())
		}
	})
	if allocs != 0 {
		t.Fatalf("Acquire+Release allocate %v times, want 0", allocs)
	}
}
