package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

// The TOML schema converts into the gate's plain types (package gate/spec,
// re-exported by gate) here, and back for the read-outs of the admin API:
// field for field, so that GroupOf(g.Spec()) is g for every group of a
// Config that SetDefaults has been through.

// Gate returns what the gate runs of c: its groups, server.trusted_proxies
// and the control loop's periods.
func (c *Config) Gate() spec.Config {
	s := spec.Config{
		Groups:         make([]spec.Group, len(c.Groups)),
		TrustedProxies: append([]string(nil), c.Server.TrustedProxies...),
		Interval:       time.Duration(c.Control.Interval),
		SaveInterval:   time.Duration(c.Control.SaveInterval),
	}
	for i := range c.Groups {
		s.Groups[i] = c.Groups[i].Spec()
	}
	return s
}

// Spec returns g as the gate's Group.
func (g *Group) Spec() spec.Group {
	c := g.Clone()
	s := spec.Group{
		Name:            c.Name,
		Match:           c.Match,
		Key:             c.Key,
		Priority:        c.Priority,
		DefaultPriority: c.DefaultPriority,
		Concurrency:     c.Concurrency,
		Targets: spec.Targets{Latency: time.Duration(c.Targets.Latency), Quantile: c.Targets.Quantile,
			CPU: c.Targets.CPU, Memory: c.Targets.Memory, CPUPressure: c.Targets.CPUPressure},
		Queue: spec.Queue{Order: c.Queue.Order, Max: c.Queue.Max, MaxWait: time.Duration(c.Queue.MaxWait),
			CodelTarget: time.Duration(c.Queue.CodelTarget), CodelInterval: time.Duration(c.Queue.CodelInterval)},
		Streams: c.Streams,
		Mode:    c.Mode,
	}
	if c.Rate != nil {
		r := c.Rate.spec()
		s.Rate = &r
	}
	return s
}

// GroupOf returns the gate's Group s as a configs Group: the inverse of
// Group.Spec.
func GroupOf(s spec.Group) Group {
	s = s.Clone()
	g := Group{
		Name:            s.Name,
		Match:           s.Match,
		Key:             s.Key,
		Priority:        s.Priority,
		DefaultPriority: s.DefaultPriority,
		Concurrency:     s.Concurrency,
		Targets: Targets{Latency: Duration(s.Targets.Latency), Quantile: s.Targets.Quantile,
			CPU: s.Targets.CPU, Memory: s.Targets.Memory, CPUPressure: s.Targets.CPUPressure},
		Queue: Queue{Order: s.Queue.Order, Max: s.Queue.Max, MaxWait: Duration(s.Queue.MaxWait),
			CodelTarget: Duration(s.Queue.CodelTarget), CodelInterval: Duration(s.Queue.CodelInterval)},
		Streams: s.Streams,
		Mode:    s.Mode,
	}
	if s.Rate != nil {
		r := rateOf(*s.Rate)
		g.Rate = &r
	}
	return g
}

func (r *Rate) spec() spec.Rate {
	return spec.Rate{Algorithm: r.Algorithm, Rate: r.Rate, Limit: r.Limit, Window: time.Duration(r.Window),
		Burst: r.Burst, Cost: r.Cost, Warmup: time.Duration(r.Warmup), Buckets: r.Buckets, MaxWait: time.Duration(r.MaxWait),
		MaxKeys: r.MaxKeys, KeyIdleTimeout: time.Duration(r.KeyIdleTimeout), Scope: r.Scope, Sync: r.Sync,
		LeasePeriod: time.Duration(r.LeasePeriod), LeaseExpiry: time.Duration(r.LeaseExpiry), Mode: r.Mode, CostHeader: r.CostHeader}
}

func rateOf(s spec.Rate) Rate {
	return Rate{Algorithm: s.Algorithm, Rate: s.Rate, Limit: s.Limit, Window: Duration(s.Window),
		Burst: s.Burst, Cost: s.Cost, Warmup: Duration(s.Warmup), Buckets: s.Buckets, MaxWait: Duration(s.MaxWait),
		MaxKeys: s.MaxKeys, KeyIdleTimeout: Duration(s.KeyIdleTimeout), Scope: s.Scope, Sync: s.Sync,
		LeasePeriod: Duration(s.LeasePeriod), LeaseExpiry: Duration(s.LeaseExpiry), Mode: s.Mode, CostHeader: s.CostHeader}
}

// Hash identifies c by its effective content (Effective): the status
// read-outs' config hash. It is "" if c cannot be encoded.
func (c *Config) Hash() string {
	b, err := c.Effective()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
