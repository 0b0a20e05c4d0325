package gate

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
)

// policy is a group's control-loop state: its law and the per-interval policy
// pieces. Owned by the control loop (Gate.mu); the hot path sees only what
// they publish.
type policy struct {
	law   adaptive.Law
	qw    *adaptive.QueueWait // nil when CoDel is off (queue.codel_target = 0)
	guard *adaptive.ResourceGuard
	shed  *adaptive.PriorityShedder
}

// seed is where a group's law starts: a learned limit (0: the configured
// initial) and a learned token rate in requests per second (0: the configured
// rate), from the state file, a reload or an override.
type seed struct {
	limit int
	rate  float64
}

// newPolicy builds c's law and policy pieces. managedMax is the configured
// rate in requests per second when the law manages the group's token rate,
// else 0.
func newPolicy(c *spec.Group, s seed, managedMax float64) (policy, error) {
	law, err := newLaw(c, s, managedMax)
	if err != nil {
		return policy{}, err
	}
	p := policy{law: law}
	if c.Queue.CodelTarget > 0 {
		qw, err := adaptive.NewQueueWait(adaptive.QueueWaitParams{
			Target:   time.Duration(c.Queue.CodelTarget),
			Interval: time.Duration(c.Queue.CodelInterval),
			Order:    queueOrder(c.Queue.Order),
			Latency:  time.Duration(c.Targets.Latency),
			Quantile: adaptive.QuantileAtLeast(c.Targets.Quantile),
		})
		if err != nil {
			return policy{}, err
		}
		p.qw = qw
	}
	if p.guard, err = adaptive.NewResourceGuard(adaptive.ResourceGuardParams{
		CPU: c.Targets.CPU, Memory: c.Targets.Memory}); err != nil {
		return policy{}, err
	}
	if p.shed, err = adaptive.NewPriorityShedder(adaptive.ShedderParams{}); err != nil {
		return policy{}, err
	}
	return p, nil
}

// newLaw builds the control law of c, starting from s: the group's own
// (Concurrency.Custom), else one of the registry of laws.
func newLaw(c *spec.Group, s seed, managedMax float64) (adaptive.Law, error) {
	if cc := &c.Concurrency; cc.Custom != nil {
		b := adaptive.Bounds{Min: cc.Min, Max: cc.Max, Initial: cc.Initial}
		if s.limit > 0 {
			b.Initial = b.Clamp(s.limit)
		}
		return cc.Custom.NewLaw(b)
	}
	k, ok := adaptive.LookupLaw(string(c.Concurrency.Law))
	if !ok {
		return nil, fmt.Errorf("gate: group %q: unknown law %q", c.Name, c.Concurrency.Law)
	}
	return k.New(lawSettings(c, k, s, managedMax))
}

// lawSettings is what c gives its law k, starting from s: a learned limit
// clamped into the bounds, and, when k manages the group's token rate
// (managedMax > 0), the rate between 1 (or managedMax, if lower) and
// managedMax requests per second, starting at the learned one.
func lawSettings(c *spec.Group, k *adaptive.LawKind, s seed, managedMax float64) adaptive.LawSettings {
	ls := c.LawSettings()
	if s.limit > 0 && !k.FixedLimit {
		ls.Bounds.Initial = ls.Bounds.Clamp(s.limit)
	}
	if k.ManagesRate {
		ls.Rate = adaptive.ManagedRate(managedMax, s.rate)
	}
	return ls
}

// lawRate is the token rate a law manages now, 0 when it manages none.
func lawRate(l adaptive.Law) float64 {
	if m, ok := l.(adaptive.RateManager); ok {
		return m.Rate()
	}
	return 0
}

// queueOrder maps the configured queue order.
func queueOrder(o spec.Order) adaptive.Order {
	switch o {
	case spec.OrderLIFO:
		return adaptive.OrderLIFO
	case spec.OrderAdaptive:
		return adaptive.OrderAdaptive
	}
	return adaptive.OrderFIFO
}

// priorityOf is the priority a configured level names, which the queue and
// the shedders rank by (adaptive.Default for none).
func priorityOf(l spec.Level) adaptive.Priority {
	p, _ := l.Priority()
	return p
}
