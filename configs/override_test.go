package configs

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

// patchGroup does what the admin API's PATCH /v1/groups/{name} is expected
// to do: decode a JSON body onto a clone of the group (fields the body
// leaves out keep their values) and hand the result to ReplaceGroup.
func patchGroup(t *testing.T, c *Config, name, body string) (*Config, error) {
	t.Helper()
	g := c.Group(name)
	if g == nil {
		return c.ReplaceGroup(spec.Group{Name: name})
	}
	patched := g.Clone()
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&patched); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return c.ReplaceGroup(patched)
}

func TestReplaceGroup(t *testing.T) {
	c, err := Load("examples/tenants.toml")
	if err != nil {
		t.Fatal(err)
	}
	before := c.Clone()

	n, err := patchGroup(t, c, "api", `{"concurrency": {"max": 800}, "targets": {"latency": "250ms"}, "rate": {"rate": 80, "burst": 160}}`)
	if err != nil {
		t.Fatal(err)
	}
	g := n.Group("api")
	if g.Concurrency.Max != 800 || g.Concurrency.Min != 10 || time.Duration(g.Targets.Latency) != 250*time.Millisecond ||
		g.Rate.Rate != 80 || g.Rate.Burst != 160 || g.Rate.Scope != spec.ScopeGlobal || g.Targets.CPU != 0.75 {
		t.Errorf("patched group = %+v, rate %+v", g, g.Rate)
	}
	if !reflect.DeepEqual(c.Clone(), before) {
		t.Error("ReplaceGroup changed the config it was called on")
	}

	// The same rules as the file, with paths and no lines.
	_, err = patchGroup(t, c, "api", `{"concurrency": {"min": 900, "max": 100}, "rate": {"burst": 0, "cost": 0, "scope": "galactic"}}`)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("bad patch: %v", err)
	}
	want := "configs: 2 problems:\n" +
		"  group[1].rate.scope: must be one of \"local\", \"global\", got \"galactic\"\n" +
		"  group[1].concurrency.min: must be ≤ max (100), got 900"
	if err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}

	// Whole-config rules too: a global quota needs [redis].
	noRedis := c.Clone()
	noRedis.Redis = nil
	for i := range noRedis.Groups {
		if r := noRedis.Groups[i].Rate; r != nil {
			r.Scope = spec.ScopeLocal
		}
	}
	_, err = patchGroup(t, noRedis, "public", `{"rate": {"scope": "global", "warmup": "0s"}}`)
	if err == nil || err.Error() != `configs: group[2].rate.scope: "global" keeps the quota in Redis: add a [redis] section` {
		t.Errorf("global without redis: %v", err)
	}

	if _, err := c.ReplaceGroup(spec.Group{Name: "nope"}); !errors.Is(err, ErrNoGroup) {
		t.Errorf("unknown group: %v", err)
	}
}

// TestGroupValidate checks one group on its own, with paths relative to it.
func TestGroupValidate(t *testing.T) {
	g := NewGroup("api")
	SetGroupDefaults(&g)
	if err := ValidateGroup(&g); err != nil {
		t.Fatal(err)
	}
	g.Concurrency.Initial = 5000
	g.Targets.CPU = 85
	g.Rate = NewRate()
	g.Rate.Rate = 10
	g.Rate.Burst = 0
	g.Rate.Cost = 20
	SetGroupDefaults(&g) // derives burst = max(cost, 10) = 20
	g.Rate.Burst = 3
	want := "configs: 3 problems:\n" +
		"  rate.burst: must be ≥ cost (20), got 3\n" +
		"  concurrency.initial: must be ≤ max (1000), got 5000\n" +
		"  targets.cpu: must be a ratio from 0 to 1, got 85 (for 85%, write 0.85)"
	if err := ValidateGroup(&g); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestJSON checks the JSON form the admin API shows and accepts: the TOML
// names, durations as strings, and a round trip.
func TestJSON(t *testing.T) {
	c := Default()
	b, err := json.Marshal(c.Groups[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"name":"default"`, `"latency":"200ms"`, `"max_wait":"500ms"`, `"law":"target"`} {
		if !bytes.Contains(b, []byte(frag)) {
			t.Errorf("JSON lacks %s: %s", frag, b)
		}
	}
	var back spec.Group
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c.Groups[0]) {
		t.Errorf("JSON round trip:\n%+v\n%+v", back, c.Groups[0])
	}
	if err := json.Unmarshal([]byte(`{"targets":{"latency":200}}`), &back); err == nil {
		t.Error("a number was accepted as a duration")
	}
}

func TestCloneSharesNothing(t *testing.T) {
	c, err := Load("testdata/valid/everything.toml")
	if err != nil {
		t.Fatal(err)
	}
	n := c.Clone()
	n.Redis.ClusterAddresses[0] = "changed:1"
	n.Groups[0].Match.Methods[0] = "DELETE"
	n.Groups[0].Match.Headers["X-Env"] = "changed"
	n.Groups[0].Rate.Rate = 1
	g := c.Groups[0]
	if c.Redis.ClusterAddresses[0] == "changed:1" || g.Match.Methods[0] == "DELETE" || g.Match.Headers["X-Env"] == "changed" ||
		g.Rate.Rate == 1 {
		t.Error("the clone shares memory with the original")
	}
}
