package rls

import (
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluicehq/sluice/limits"
)

// TestCurrentLimitUnits: a policy is reported as the gate's RateLimit-Policy
// states it, q per w whole seconds, in the largest unit that divides w.
func TestCurrentLimitUnits(t *testing.T) {
	const (
		sec  = rlsv3.RateLimitResponse_RateLimit_SECOND
		min  = rlsv3.RateLimitResponse_RateLimit_MINUTE
		hour = rlsv3.RateLimitResponse_RateLimit_HOUR
		day  = rlsv3.RateLimitResponse_RateLimit_DAY
	)
	for _, c := range []struct {
		pol   limits.Policy
		q     uint32
		unit  rlsv3.RateLimitResponse_RateLimit_Unit
		multi uint32 // 0: omitted (1)
	}{
		{limits.Policy{Quota: 100, Window: time.Second}, 100, sec, 0},
		{limits.Policy{Quota: 100, Window: time.Minute}, 100, min, 0},
		{limits.Policy{Quota: 100, Window: 90 * time.Second}, 100, sec, 90},
		{limits.Policy{Quota: 100, Window: 2 * time.Minute}, 100, min, 2},
		{limits.Policy{Quota: 5, Window: time.Hour}, 5, hour, 0},
		{limits.Policy{Quota: 5, Window: 3 * time.Hour}, 5, hour, 3},
		{limits.Policy{Quota: 1000, Window: 24 * time.Hour}, 1000, day, 0},
		// The gate states at most a day, the quota in proportion.
		{limits.Policy{Quota: 1000, Window: 7 * 24 * time.Hour}, 142, day, 0},
		{limits.Policy{Quota: 10, Window: 5 * time.Minute}, 10, min, 5},
		// A token bucket of 20 refilled at 100/s: a 200ms window, which the
		// gate states as 100 per second.
		{limits.Policy{Quota: 20, Window: 200 * time.Millisecond}, 100, sec, 0},
		// A bucket of 3 at 2/s: 1.5s, stated as 4 per 2 seconds (rounded
		// down, never more than the limiter allows).
		{limits.Policy{Quota: 3, Window: 1500 * time.Millisecond}, 4, sec, 2},
		{limits.Policy{Quota: 1 << 40, Window: time.Second}, 1<<32 - 1, sec, 0},
	} {
		f := render("g", limits.Result{Allowed: true, Remaining: 1}, c.pol, nil)
		l := currentLimit(&f)
		if l.GetRequestsPerUnit() != c.q || l.GetUnit() != c.unit || l.GetUnitMultiplier().GetValue() != c.multi || l.GetName() != "g" {
			t.Errorf("%+v (%s): %v, want %d per %v × %d", c.pol, f.policy, l, c.q, c.unit, c.multi)
		}
	}
	if f := render("g", limits.Result{Allowed: true}, limits.Policy{}, nil); currentLimit(&f) != nil || f.policy != "" {
		t.Errorf("no policy: %+v", f)
	}
}
