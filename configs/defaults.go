package configs

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/limits"
)

// Defaults live here, in two kinds.
//
// Static defaults are where decoding starts: New for the whole config,
// NewGroup and NewRate for a group and its rate (gate/spec's types), and the
// reset methods of the other tables that can repeat or are optional (redis,
// permit, rls and theirs); reset picks the one for a table. A key in the file overrides them,
// so an explicit zero stays zero: queue.max = 0 means "no queue", targets.cpu = 0 means
// "no CPU target".
//
// Derived defaults depend on other fields (the law, the algorithm, the key,
// min and max), so they are filled after decoding, by SetDefaults, into
// fields whose zero is never valid; for those, 0 and absent both mean
// "derive it". SetDefaults also appends the catch-all group and normalises
// spelling (upper-case methods, canonical header names, lower-case host).

// Derived default values are the gate's own (package gate/spec), where
// SetDefaults derives them: one place for each.
const (
	maxKeyIdle = Duration(spec.MaxKeyIdle)
	// A leased global quota's renewal period and lease expiry (at least 3
	// periods), stated for sluice check.
	defaultLeasePeriod = Duration(spec.DefaultLeasePeriod)
	defaultLeaseExpiry = Duration(spec.DefaultLeaseExpiry)
)

// DefaultAdminListen is admin.listen's default: loopback only. Package admin
// takes it as the default of its own listener (admin.DefaultListen), and
// `sluice status` as the admin API it asks.
const DefaultAdminListen = "127.0.0.1:9901"

// CatchAllName names the group SetDefaults appends for requests that no
// group of the file matches.
const CatchAllName = "default"

// New returns a Config with every static default and no groups: what an
// empty file decodes to, before SetDefaults. Upstream.URL is left empty and
// must be set.
func New() *Config {
	return &Config{
		Server: Server{
			Listen:            "127.0.0.1:8080",
			H2C:               true,
			ReadHeaderTimeout: Duration(defaults.ReadHeaderTimeout),
			IdleTimeout:       Duration(defaults.IdleTimeout),
			MaxHeaderBytes:    defaults.MaxHeaderBytes,
			ShutdownGrace:     Duration(30 * time.Second),
			HTTP1:             HTTP1Sluice,
		},
		Upstream: Upstream{
			Protocol:              ProtocolAuto,
			DialTimeout:           Duration(defaults.DialTimeout),
			ResponseHeaderTimeout: Duration(defaults.UpstreamTimeout),
			IdleConnTimeout:       Duration(defaults.IdleConnTimeout),
			MaxIdleConnsPerHost:   defaults.MaxIdleConns,
			Circuit:               defaultCircuit(),
		},
		Probe: Probe{Source: ProbeSourceAuto, Root: "/"},
		Admin: Admin{Listen: DefaultAdminListen},
		Control: Control{Interval: Duration(spec.DefaultInterval), SaveInterval: Duration(spec.DefaultSaveInterval),
			StateMaxAge: Duration(spec.DefaultStateMaxAge)},
	}
}

// NewGroup returns a group with every static default, matching every
// request: no target (so SetGroupDefaults derives law "gradient", which
// needs none), no rate limit, a FIFO queue of 100 with CoDel.
func NewGroup(name string) spec.Group {
	return spec.Group{
		Name:     name,
		Key:      spec.KeyNone,
		Priority: spec.Priority(spec.LevelDefault),
		Mode:     spec.ModeEnforce,
		Targets:  spec.Targets{Quantile: spec.DefaultQuantile},
		Queue: spec.Queue{
			Order:         spec.OrderFIFO,
			Max:           100,
			MaxWait:       spec.DefaultQueueMaxWait,
			CodelTarget:   adaptive.DefaultCodelTarget,
			CodelInterval: spec.DefaultCodelInterval,
		},
		Streams: spec.Streams{Max: spec.DefaultStreamsMax},
	}
}

// NewRate returns a rate limit with its static defaults: a local token
// bucket of cost 1. Set Rate, or Limit and Window.
func NewRate() *spec.Rate {
	return &spec.Rate{Algorithm: spec.AlgorithmTokenBucket, Cost: 1, Scope: spec.ScopeLocal, Mode: spec.ModeEnforce}
}

// NewRedis returns a [redis] section with its static defaults. Set Address
// or ClusterAddresses.
func NewRedis() *Redis {
	r := new(Redis)
	r.reset()
	return r
}

// reset sets the table *p to its static defaults, where decoding starts:
// the reset method of a type of this package's, the New function of one of
// gate/spec's.
func reset(p any) {
	switch p := p.(type) {
	case *spec.Group:
		*p = NewGroup("")
	case *spec.Rate:
		*p = *NewRate()
	case interface{ reset() }:
		p.reset()
	default:
		panic(fmt.Sprintf("configs: no static defaults for %T", p)) // a schema bug, caught by the tests
	}
}

// defaultCircuit is the breaker of [upstream.circuit] before the file's
// values: the proxy's breaker's own (breaker.Default, package
// proxy/breaker), which package internal/defaults holds for both.
func defaultCircuit() Circuit {
	return Circuit{
		FailureRatio:        defaults.BreakerFailureRatio,
		MinRequests:         defaults.BreakerMinRequests,
		Window:              Duration(defaults.BreakerWindow),
		ConsecutiveFailures: defaults.BreakerConsecutiveFailures,
		OpenDuration:        Duration(defaults.BreakerOpenDuration),
		HalfOpenProbes:      defaults.BreakerProbes,
	}
}

// NewPermit returns a [permit] section with its static defaults.
func NewPermit() *Permit {
	p := new(Permit)
	p.reset()
	return p
}

// NewRLS returns an [rls] section with its static defaults and no domains.
func NewRLS() *RLS {
	r := new(RLS)
	r.reset()
	return r
}

// The front-ends' defaults: the permit service on loopback TCP (with its
// token file), Envoy's rate limit service on a unix socket, both sockets
// 0o660; leases of 30s, at most 16384 at once.
func (p *Permit) reset() {
	*p = Permit{
		Listen:     defaults.PermitListen,
		SocketMode: defaults.SocketMode,
		Lease:      Duration(defaults.PermitLease),
		MaxLeases:  defaults.PermitMaxLeases,
	}
}

func (r *RLS) reset() {
	*r = RLS{Listen: defaults.RLSListen, SocketMode: defaults.SocketMode, Headers: RLSHeadersIETF}
}

func (r *Redis) reset() {
	*r = Redis{
		Timeout:   Duration(defaults.RedisTimeout),
		Fallback:  limits.FallbackLocal,
		Nodes:     1,
		KeyPrefix: defaults.RedisKeyPrefix,
	}
}

// SetDefaults fills the derived defaults of every group (see
// [SetGroupDefaults]) and, unless some group already matches every request
// or a group is named "default", appends the catch-all group: NewGroup
// ("default"). Requests that match no group of the file go there, so they
// are limited with the default settings rather than passed through
// unguarded; to treat them otherwise, end the file with a catch-all group
// of your own. SetDefaults is idempotent.
func (c *Config) SetDefaults() {
	catchAll, named := false, false
	for i := range c.Groups {
		g := &c.Groups[i]
		SetGroupDefaults(g)
		catchAll = catchAll || g.Match.CatchAll()
		named = named || g.Name == CatchAllName
	}
	if !catchAll && !named {
		g := NewGroup(CatchAllName)
		SetGroupDefaults(&g)
		c.Groups = append(c.Groups, g)
	}
	if c.Redis != nil {
		for i, a := range c.Redis.ClusterAddresses {
			c.Redis.ClusterAddresses[i] = strings.TrimSpace(a)
		}
	}
}

// SetGroupDefaults fills the derived defaults of g: the concurrency bounds
// of an adaptive law and its own knob, the burst, buckets, wait and per-key
// bounds of the rate, the default priority of a header priority. Fields
// already set are kept. It also normalises spelling: methods to upper case,
// header names to canonical form, the host to lower case without a trailing
// dot. Empty enum fields get their static default. It is idempotent.
func SetGroupDefaults(g *spec.Group) {
	// Spelled as the gate matches (spec.Match.Normal: of two spellings of
	// one header both are kept, for Validate to report). An empty table of
	// headers is none, as the effective config writes it (an empty list of
	// methods is an error Validate reports).
	n := g.Match.Normal()
	g.Match.Methods, g.Match.Host, g.Match.Headers = n.Methods, n.Host, n.Headers
	if len(g.Match.Headers) == 0 {
		g.Match.Headers = nil
	}

	// The key, priority and concurrency default as the gate's do
	// (spec.Group.WithDefaults: the law from the targets, the bounds and
	// knobs from the law); the other fields keep an explicit zero for
	// Validate to judge.
	d := g.WithDefaults()
	g.Key, g.Priority, g.DefaultPriority = d.Key, d.Priority, d.DefaultPriority
	g.Concurrency = d.Concurrency
	if g.Rate != nil {
		*g.Rate = g.Rate.WithDefaults(g.Key)
	}
	if g.Queue.Order == "" {
		g.Queue.Order = spec.OrderFIFO
	}
}
