package gate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
)

// TestNewRefuses: a config built in Go that the gate cannot run is refused
// at New with a message naming the group and what is wrong.
func TestNewRefuses(t *testing.T) {
	catchAll := Group{Name: "rest", Targets: Targets{Latency: time.Second}}
	for _, tt := range []struct {
		name   string
		groups []Group
		res    ResourceSampler
		want   string
	}{
		{"no group", nil, nil, "no group"},
		{"no name", []Group{{}}, nil, "group[0]: name: required"},
		{"two of a name", []Group{{Name: "a", Match: Match{PathPrefix: "/a/"}}, {Name: "a"}}, nil, `group "a": name: duplicate group name "a", first used by group[0] "a"`},
		{"no catch-all", []Group{{Name: "a", Match: Match{PathPrefix: "/a/"}}}, nil, `group "a": match: no group accepts every request`},
		{"bad key", []Group{{Name: "a", Key: "cookie"}}, nil, `group "a": key: must be`},
		{"a key clients forge", []Group{{Name: "a", Key: "header:x-forwarded-for"}}, nil, `group "a": key: "header:X-Forwarded-For" is a list every client can prepend to`},
		{"bad key header", []Group{{Name: "a", Key: "header:X Y"}}, nil, `group "a": key: header name "X Y"`},
		{"bad priority", []Group{{Name: "a", Priority: "urgent"}}, nil, `group "a": priority: must be`},
		{"bad default priority", []Group{{Name: "a", Priority: "header:X-Prio", DefaultPriority: "urgent"}}, nil, `group "a": default_priority: must be "critical", "default" or "sheddable", got "urgent"`},
		{"bad order", []Group{{Name: "a", Queue: Queue{Order: "random"}}}, nil, `group "a": queue.order: must be one of "fifo", "lifo", "adaptive", got "random"`},
		{"fixed without a limit", []Group{{Name: "a", Concurrency: Concurrency{Law: spec.LawFixed}}}, nil, `group "a": concurrency.limit: required with law "fixed"`},
		{"cpu without a sampler", []Group{catchAll, {Name: "b", Targets: Targets{CPU: 0.8}}}, nil, `group "b": targets.cpu: 0.8 needs a resource sampler`},
		{"memory without a sampler", []Group{{Name: "a", Targets: Targets{Memory: 0.9}}}, nil, `group "a": targets.memory: 0.9 needs a resource sampler`},
		{"pressure without a sampler", []Group{{Name: "a", Targets: Targets{CPUPressure: 0.2}}}, nil, `group "a": targets.cpu_pressure: 0.2 needs a resource sampler`},
		{"bounds the law refuses", []Group{{Name: "a", Concurrency: Concurrency{Min: 50, Max: 10}}}, NoResources, `group "a": concurrency.min: must be ≤ max (10), got 50`},
		{"an unknown law", []Group{{Name: "a", Concurrency: Concurrency{Law: "pid"}}}, nil, `group "a": concurrency.law: must be one of "fixed", "aimd", "vegas", "gradient", "target", got "pid"`},
		{"a queue the limiter refuses", []Group{{Name: "a", Concurrency: Concurrency{Law: spec.LawFixed, Limit: 5}, Queue: Queue{Max: -1}}}, nil, `group "a": queue.max: must be from 0 to 1000000, got -1`},
		{"target law without a target", []Group{{Name: "a", Concurrency: Concurrency{Law: spec.LawTarget}}}, nil,
			`group "a": targets: law "target" needs at least one of latency, cpu, memory or cpu_pressure`},
		{"a quantile in percent", []Group{{Name: "a", Targets: Targets{Latency: time.Second, Quantile: 99}}}, nil, `group "a": targets.quantile: must be from 0.5 to 0.9999, got 99`},
		{"a rate given twice", []Group{{Name: "a", Rate: &Rate{Rate: 10, Limit: 100, Window: time.Second}}}, nil, `group "a": rate.rate: set rate, or limit and window, not both`},
		{"global without GlobalRate", []Group{{Name: "a", Rate: &Rate{Rate: 10, Scope: spec.ScopeGlobal}}}, nil, "needs a global rate limiter"},
	} {
		_, err := New(Params{Config: Config{Groups: tt.groups}, Resources: tt.res})
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Count(err.Error(), "gate: ") != 1 {
			t.Errorf("%s: New = %v, want an error with %q, prefixed once", tt.name, err, tt.want)
		}
	}
	if _, err := New(Params{Config: Config{Groups: []Group{{Name: "a", Targets: Targets{CPU: 0.8}}}}, Resources: NoResources}); err != nil {
		t.Errorf("a CPU target with NoResources: %v", err)
	}
}

// TestZeroGroupRuns: a group given by its name alone runs, as the README's
// "the zero value of each field is its documented default" promises: with
// no target it gets law "gradient", which needs none, and its own knob.
func TestZeroGroupRuns(t *testing.T) {
	g, err := New(Params{Config: Config{Groups: []Group{{Name: "api"}}}})
	if err != nil {
		t.Fatal(err)
	}
	gc := g.Config().Group("api")
	k, _ := adaptive.LookupLaw(string(spec.LawGradient))
	tol, _ := k.Knob("tolerance")
	if gc.Concurrency.Law != spec.LawGradient || gc.Concurrency.Tolerance != tol.Default || gc.Concurrency.Initial != adaptive.DefaultInitialLimit {
		t.Errorf("concurrency %+v, want law gradient from its defaults", gc.Concurrency)
	}
	p, rej, ok := g.EnterClass(t.Context(), mustClass(t, g, "api"))
	if !ok {
		t.Fatalf("refused: %+v", rej)
	}
	p.Done(Success)
}

// TestZeroGroupIsItsDefaults: a group given by its name, a latency target,
// a rate and a key runs with the documented defaults, and Config shows them.
func TestZeroGroupIsItsDefaults(t *testing.T) {
	g, err := New(Params{Config: Config{Groups: []Group{{Name: "g", Rate: &Rate{Rate: 50}, Key: "header:x-tenant",
		Targets: Targets{Latency: 100 * time.Millisecond}}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Config()
	gc := c.Group("g")
	want := Group{Name: "g", Key: "header:X-Tenant", Priority: "default",
		Rate: &Rate{Algorithm: spec.AlgorithmTokenBucket, Rate: 50, Burst: 50, Cost: 1, Scope: spec.ScopeLocal,
			MaxKeys: spec.DefaultMaxKeys, KeyIdleTimeout: spec.MinKeyIdle, Mode: spec.ModeEnforce},
		Concurrency: Concurrency{Law: spec.LawTarget, Min: adaptive.DefaultMinLimit, Max: adaptive.DefaultMaxLimit, Initial: adaptive.DefaultInitialLimit},
		Targets:     Targets{Latency: 100 * time.Millisecond, Quantile: spec.DefaultQuantile},
		Queue:       Queue{Order: spec.OrderFIFO},
		Mode:        spec.ModeEnforce,
	}
	if gc == nil || !equalGroups(*gc, want) {
		t.Fatalf("Config().Group = %+v (rate %+v), want %+v (rate %+v)", gc, gc.Rate, want, want.Rate)
	}
	if c.Interval != adaptive.DefaultInterval || c.SaveInterval != spec.DefaultSaveInterval {
		t.Errorf("intervals %v, %v", c.Interval, c.SaveInterval)
	}
	st, _ := g.Group("g")
	if st.Limit != adaptive.DefaultInitialLimit || st.QueueMax != 0 || st.TokenRate != 50 {
		t.Errorf("status: limit %d, queue %d, rate %v", st.Limit, st.QueueMax, st.TokenRate)
	}
	p, rej, ok := g.EnterClass(t.Context(), mustClass(t, g, "g"))
	if !ok {
		t.Fatalf("first request refused: %v", rej.Reason)
	}
	p.Done(Success)
}

// TestOverrideRefusesAResourceTargetWithoutSampler: what New refuses, a
// runtime change cannot bring in either.
func TestOverrideRefusesAResourceTargetWithoutSampler(t *testing.T) {
	g, err := New(Params{Config: Config{Groups: []Group{{Name: "g", Targets: Targets{Latency: 100 * time.Millisecond}}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Config().Group("g").Clone()
	c.Targets.CPU = 0.7
	if err := g.Override(c); err == nil || !strings.Contains(err.Error(), `gate: override: group "g": targets.cpu: 0.7 needs a resource sampler`) {
		t.Errorf("Override with a CPU target and no sampler: %v", err)
	}
	c.Name = "nope"
	if err := g.Override(c); !errors.Is(err, ErrNoGroup) {
		t.Errorf("Override of an unknown group: %v, want ErrNoGroup", err)
	}
}

func mustClass(t *testing.T, g *Gate, name string) Class {
	t.Helper()
	c, ok := g.ClassOf(name, "k", adaptive.Default)
	if !ok {
		t.Fatalf("no group %q", name)
	}
	return c
}

func equalGroups(a, b Group) bool {
	ra, rb := a.Rate, b.Rate
	a.Rate, b.Rate = nil, nil
	if (ra == nil) != (rb == nil) || ra != nil && *ra != *rb {
		return false
	}
	return a.Name == b.Name && a.Key == b.Key && a.Priority == b.Priority && a.DefaultPriority == b.DefaultPriority &&
		a.Concurrency == b.Concurrency && a.Targets == b.Targets && a.Queue == b.Queue &&
		a.Match.CatchAll() && b.Match.CatchAll()
}
