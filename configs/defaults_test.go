package configs

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

func TestSetDefaultsAppendsCatchAll(t *testing.T) {
	tests := []struct {
		name   string
		groups []spec.Group
		want   []string
	}{
		{"no groups", nil, []string{"default"}},
		{"no catch-all", []spec.Group{withMatch(NewGroup("api"), spec.Match{PathPrefix: "/api/"})}, []string{"api", "default"}},
		{"own catch-all", []spec.Group{NewGroup("all")}, []string{"all"}},
		{"slash catch-all", []spec.Group{withMatch(NewGroup("all"), spec.Match{PathPrefix: "/"})}, []string{"all"}},
		// A group that takes the name stays alone; Validate explains.
		{"name taken", []spec.Group{withMatch(NewGroup("default"), spec.Match{Path: "/x"})}, []string{"default"}},
	}
	for _, tt := range tests {
		c := New()
		c.Upstream.URL = "http://h:1"
		c.Groups = tt.groups
		c.SetDefaults()
		if got := groupNames(c); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: groups %v, want %v", tt.name, got, tt.want)
		}
	}
}

func withMatch(g spec.Group, m spec.Match) spec.Group {
	g.Match = m
	return g
}

func TestSetDefaultsIsIdempotent(t *testing.T) {
	for _, file := range []string{"testdata/valid/derived.toml", "testdata/valid/inline_groups.toml", "examples/tenants.toml"} {
		c, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		again := c.Clone()
		again.SetDefaults()
		if !reflect.DeepEqual(again, c.Clone()) {
			t.Errorf("%s: SetDefaults changed a config it had filled", file)
		}
	}
}

// TestBuiltInGo checks the path of a config built in Go: New, NewGroup,
// SetDefaults, Validate, with problems named by path and without lines.
func TestBuiltInGo(t *testing.T) {
	c := New()
	c.Upstream.URL = "http://127.0.0.1:9000"
	g := NewGroup("api")
	g.Match.PathPrefix = "/api/"
	g.Key = spec.KeyHeader("x-tenant")
	g.Rate = NewRate()
	g.Rate.Rate = 20
	c.Groups = []spec.Group{g}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.Groups[0]; got.Key != "header:X-Tenant" || got.Rate.Burst != 20 || got.Concurrency.Initial != 20 {
		t.Errorf("derived: key %q, burst %d, initial %d", got.Key, got.Rate.Burst, got.Concurrency.Initial)
	}

	c.Groups[0].Rate.Scope = spec.ScopeGlobal
	c.Groups[0].Concurrency.Min = 0
	err := c.Validate()
	want := "configs: 2 problems:\n" +
		"  group[0].concurrency.min: must be from 1 to 1000000, got 0\n" +
		"  group[0].rate.scope: \"global\" keeps the quota in Redis: add a [redis] section"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	c.Redis = NewRedis()
	c.Redis.Address = "127.0.0.1:6379"
	c.Groups[0].Concurrency.Min = 1
	if err := c.Validate(); err != nil {
		t.Errorf("with [redis]: %v", err)
	}

	// Without SetDefaults nothing takes the requests no group matches.
	bare := New()
	bare.Upstream.URL = "http://h:1"
	if err := bare.Validate(); err == nil || err.Error() != `configs: group: no group accepts every request; SetDefaults appends one named "default"` {
		t.Errorf("no groups: %v", err)
	}
}

func TestRateHelpers(t *testing.T) {
	tests := []struct {
		r          spec.Rate
		perSecond  float64
		limit      int
		window     time.Duration
		freshAfter time.Duration
	}{
		{spec.Rate{Algorithm: spec.AlgorithmTokenBucket, Rate: 10, Burst: 50, Cost: 1}, 10, 10, time.Second, 5 * time.Second},
		{spec.Rate{Algorithm: spec.AlgorithmFixedWindow, Limit: 600, Window: time.Minute, Cost: 1}, 10, 600, time.Minute, time.Minute},
		{spec.Rate{Algorithm: spec.AlgorithmSlidingWindow, Limit: 6, Window: time.Hour, Cost: 1}, 6.0 / 3600, 6, time.Hour, 2 * time.Hour},
		{spec.Rate{Algorithm: spec.AlgorithmLeakyQueue, Rate: 5, MaxWait: time.Second, Cost: 1}, 5, 5, time.Second, time.Second},
		{spec.Rate{Algorithm: spec.AlgorithmLeakyBucket, Rate: 1e-6, Burst: 1e9, Cost: 1}, 1e-6, 0, time.Second, time.Duration(maxKeyIdle)},
	}
	for i, tt := range tests {
		if got := tt.r.PerSecond(); got != tt.perSecond {
			t.Errorf("%d: PerSecond = %v, want %v", i, got, tt.perSecond)
		}
		if l, w := tt.r.Quota(); l != tt.limit || w != tt.window {
			t.Errorf("%d: Quota = %d per %v, want %d per %v", i, l, w, tt.limit, tt.window)
		}
		if got := time.Duration(tt.r.FreshAfter()); got != tt.freshAfter {
			t.Errorf("%d: FreshAfter = %v, want %v", i, got, tt.freshAfter)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {250 * time.Millisecond, "250ms"}, {time.Minute, "1m"}, {90 * time.Second, "1m30s"},
		{time.Hour, "1h"}, {time.Hour + time.Minute, "1h1m"}, {-5 * time.Millisecond, "-5ms"},
	} {
		got := Duration(tt.d).String()
		if got != tt.want {
			t.Errorf("%v: String = %q, want %q", tt.d, got, tt.want)
		}
		var back Duration
		if err := back.UnmarshalText([]byte(got)); err != nil || time.Duration(back) != tt.d {
			t.Errorf("%q parses to %v, %v", got, back, err)
		}
	}
	var d Duration
	if err := d.UnmarshalText([]byte("250")); err == nil {
		t.Error(`"250" parsed as a duration`)
	}
}

func TestLevels(t *testing.T) {
	if !(spec.LevelCritical.Rank() < spec.LevelDefault.Rank() && spec.LevelDefault.Rank() < spec.LevelSheddable.Rank()) || spec.Level("x").Rank() != -1 {
		t.Error("ranks out of order")
	}
	p := spec.PriorityHeader("X-Priority")
	if name, ok := p.Header(); !ok || name != "X-Priority" {
		t.Errorf("Header() = %q, %v", name, ok)
	}
	if _, ok := p.Level(); ok {
		t.Error("a header priority has a fixed level")
	}
	if l, ok := spec.Priority("critical").Level(); !ok || l != spec.LevelCritical {
		t.Errorf("Level() = %q, %v", l, ok)
	}
	if name, ok := spec.KeyIP.Header(); ok || name != "" {
		t.Errorf("KeyIP.Header() = %q, %v", name, ok)
	}
}

// A group's static default targets: none but the quantile (p99), whether
// built in Go or decoded from a group that names none, as in the library
// (spec.Targets): its law is then "gradient", which needs none, and
// "target" once a target is set.
func TestDefaultTargets(t *testing.T) {
	want := spec.Targets{Quantile: 0.99}
	if got := NewGroup("g").Targets; got != want {
		t.Errorf("NewGroup targets %+v, want %+v", got, want)
	}
	c, err := Parse("t.toml", []byte("[upstream]\nurl = \"http://h:1\"\n[[group]]\nname = \"a\"\nmatch = { path_prefix = \"/a/\" }\n"+
		"[[group]]\nname = \"b\"\n  [group.targets]\n  cpu_pressure = 0.4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Group("a").Targets; got != want {
		t.Errorf("decoded targets %+v, want %+v", got, want)
	}
	if got := c.Group("b").Targets; got.CPUPressure != 0.4 || got.CPU != 0 || got.Memory != 0 {
		t.Errorf("targets with cpu_pressure %+v", got)
	}
	if a, b := c.Group("a").Concurrency.Law, c.Group("b").Concurrency.Law; a != spec.LawGradient || b != spec.LawTarget {
		t.Errorf("laws %q without a target and %q with one, want gradient and target", a, b)
	}
}
