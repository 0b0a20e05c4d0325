package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/limits"
)

// Algorithm names a rate algorithm that can keep its state in Redis. The
// values are those of the configuration's [group.rate] algorithm.
type Algorithm string

// Algorithms. Each decides exactly as the limits type of the same name.
const (
	TokenBucket   Algorithm = "token_bucket"   // GCRA; as limits.TokenBucket without warm-up
	LeakyBucket   Algorithm = "leaky_bucket"   // GCRA; as limits.LeakyBucket
	FixedWindow   Algorithm = "fixed_window"   // as limits.FixedWindow
	SlidingWindow Algorithm = "sliding_window" // as limits.SlidingWindow
)

// Defaults of LeaseParams.
const (
	DefaultLeasePeriod  = defaults.LeasePeriod
	DefaultLeaseTTL     = defaults.LeaseExpiry
	DefaultLeaseMaxKeys = 16
)

// LeaseParams configures leased mode. Zero fields mean their default.
type LeaseParams struct {
	// Period is how often a node renews its leases. A renewal asks for
	// about 1.5 periods of the node's demand, so the units leased out at
	// once (the over-admission bound) are about 1.5 periods of the quota's
	// rate, and Redis serves one renewal call per node per period. From
	// 10 ms to 10 s; default 100 ms.
	Period time.Duration
	// TTL is how long a renewal keeps a lease: a node that stops renewing
	// (it died, or lost Redis) stops counting against the quota TTL after
	// its last renewal, and stops using its units before then. At least 3
	// periods, at most 1 h; default 2 s.
	TTL time.Duration
	// MaxKeys is how many keys of a quota split per key one node leases at
	// once (the hottest on that node); its other keys are decided exactly.
	// From 1 to 1024; default 16.
	MaxKeys int
}

// resolved returns p with its defaults filled in.
func (p LeaseParams) resolved() LeaseParams {
	if p.Period == 0 {
		p.Period = DefaultLeasePeriod
	}
	if p.TTL == 0 {
		p.TTL = max(DefaultLeaseTTL, 3*p.Period)
	}
	if p.MaxKeys == 0 {
		p.MaxKeys = DefaultLeaseMaxKeys
	}
	return p
}

// Defaults of StoreParams.
const (
	DefaultTimeout    = defaults.RedisTimeout
	DefaultKeyPrefix  = defaults.RedisKeyPrefix
	DefaultBackoffMin = 50 * time.Millisecond
	DefaultBackoffMax = 2 * time.Second
	DefaultHeartbeat  = time.Second
)

// maxSpan bounds a window and a bucket's burst/rate (its tolerance tau):
// the scripts compute in doubles, exact for integers up to 2^53 ns, and
// need headroom for an instant's nanoseconds on top.
const maxSpan = 720 * time.Hour

// algorithm is the registry's description of a: its shape, whether it can
// be leased, and for a window the highest limit the scripts can keep (they
// keep a window's counts as decimal fields of one 64-bit integer, see
// lua/fixed.lua and lua/sliding.lua: limits.Algorithm.GlobalMaxLimit). False
// for an algorithm this package has no script for.
func algorithm(a Algorithm) (*limits.Algorithm, bool) {
	alg, ok := limits.LookupAlgorithm(string(a))
	if !ok || alg.Global == limits.GlobalNone || scripts[a] == nil {
		return nil, false
	}
	return alg, true
}

// algorithms lists the algorithms this package keeps in Redis.
func algorithms() []string {
	return limits.AlgorithmNames(func(a *limits.Algorithm) bool { _, ok := algorithm(Algorithm(a.Name)); return ok })
}

// StoreParams configures a Store: where Redis is, how long a decision may
// take, and what to do when it cannot. Zero fields mean their default;
// one of Address, ClusterAddresses and SentinelAddresses is required.
type StoreParams struct {
	// Address is one Redis server, "host:port".
	Address string
	// ClusterAddresses are seed nodes of a Redis Cluster, "host:port" each.
	ClusterAddresses []string
	// SentinelAddresses are Redis Sentinels watching the master named
	// MasterName, "host:port" each: the store asks them where the master
	// is, and follows a failover to the replica they promote.
	SentinelAddresses []string
	// MasterName is the master's name in the sentinels' configuration;
	// required with SentinelAddresses.
	MasterName string
	// SentinelPassword authenticates to the sentinels (their own
	// requirepass; "": none); Username and Password are the master's. Not
	// together with SentinelPasswordFile.
	SentinelPassword string
	// SentinelPasswordFile holds SentinelPassword (one line; surrounding
	// white space is trimmed). It is read by Open.
	SentinelPasswordFile string
	// Username is the ACL user; "" is the default user.
	Username string
	// Password authenticates; "" means none. Not together with PasswordFile.
	Password string
	// PasswordFile holds the password (one line; surrounding white space is
	// trimmed). It is read by Open.
	PasswordFile string
	// DB is the database number (a cluster has only 0). Default 0.
	DB int
	// TLS, when not nil, connects with TLS using this configuration (the
	// server name defaults to the host of each address).
	TLS *tls.Config
	// CAFile is a PEM bundle trusted instead of TLS.RootCAs (by default the
	// system roots); needs TLS. It is read by Open.
	CAFile string
	// Timeout is the least time one decision waits for Redis, from the call
	// to the answer, including a reload of the script after a Redis
	// restart: the wait adapts to twice the 99th percentile of Redis's
	// answers over the last second (doubling while more than 1 % of them
	// come late), up to 100 ms (or Timeout, if more). A decision that takes
	// longer is answered by the fallback, within Overshoot of the quota.
	// From 1 ms to 1 s; default 5 ms.
	Timeout time.Duration
	// Fallback is the policy while Redis cannot answer. Default
	// limits.FallbackLocal.
	Fallback limits.Fallback
	// Nodes is how many nodes share the global quotas, at least 1
	// (default 1). The local fallback divides each quota by the larger of
	// Nodes and the nodes seen alive through heartbeats.
	Nodes int
	// Heartbeat is how often this node registers itself in Redis so the
	// nodes can count each other; a node is counted for 3 heartbeats.
	// Default 1 s; negative: no heartbeat (only Nodes is used).
	Heartbeat time.Duration
	// KeyPrefix starts every key this store writes, so several deployments
	// can share one Redis. Default "sluice:".
	KeyPrefix string
	// BackoffMin and BackoffMax bound how long the store stops calling
	// Redis after consecutive failures: the pause starts at BackoffMin and
	// doubles after each failed probe, up to BackoffMax (each pause jittered
	// by ±20 %). Defaults 50 ms and 2 s.
	BackoffMin, BackoffMax time.Duration
}

// LimiterParams configures one global quota: an algorithm and its amounts,
// applied per key. Rate and Burst apply to the buckets, Limit and Window to
// the windows.
type LimiterParams struct {
	// Name names the quota in Redis keys (the group's name): 1 to 64
	// letters, digits, '.', '_' or '-'. Required.
	Name string
	// Algorithm is the rate algorithm. Required.
	Algorithm Algorithm
	// Rate is the refill (token bucket) or leak (leaky bucket) rate in units
	// per second, in (0, 1e9].
	Rate float64
	// Burst is a bucket's capacity in units, at least 1; Burst/Rate at most
	// 720 h.
	Burst int64
	// Limit is a window's quota in units, at least 1 (below 1e10 for a fixed
	// window, below 1e9 for a sliding window).
	Limit int64
	// Window is a window's length, from 1 ms to 720 h.
	Window time.Duration
	// MaxKeys bounds the keys of the local fallback (limits.KeyedParams).
	// Default limits.DefaultMaxKeys.
	MaxKeys int
	// Sync is how the nodes share the quota; default limits.SyncExact.
	Sync limits.Sync
	// Lease configures limits.SyncLeased (and must be zero otherwise).
	Lease LeaseParams
}

// Params configures a Limiter with a Store of its own (New).
type Params struct {
	StoreParams
	LimiterParams
}

// problems collects every validation error, so Validate reports them all.
type problems []error

func (ps *problems) add(format string, args ...any) {
	*ps = append(*ps, fmt.Errorf("limits/redis: "+format, args...))
}

func (ps problems) err() error { return errors.Join(ps...) }

// Validate reports every problem with p.
func (p StoreParams) Validate() error {
	var ps problems
	set := 0
	for _, b := range []bool{p.Address != "", len(p.ClusterAddresses) > 0, len(p.SentinelAddresses) > 0} {
		if b {
			set++
		}
	}
	switch {
	case set > 1:
		ps.add("set only one of address, cluster addresses and sentinel addresses")
	case set == 0:
		ps.add("an address (one server), cluster addresses (a cluster) or sentinel addresses (a master they watch) is required")
	}
	if p.Address != "" {
		ps.hostPort("address", p.Address)
	}
	for i, a := range p.ClusterAddresses {
		ps.hostPort(fmt.Sprintf("cluster address %d", i), a)
	}
	for i, a := range p.SentinelAddresses {
		ps.hostPort(fmt.Sprintf("sentinel address %d", i), a)
	}
	if (len(p.SentinelAddresses) > 0) != (p.MasterName != "") {
		ps.add("sentinel addresses and a master name go together")
	}
	if (p.SentinelPassword != "" || p.SentinelPasswordFile != "") && len(p.SentinelAddresses) == 0 {
		ps.add("a sentinel password needs sentinel addresses")
	}
	if p.SentinelPassword != "" && p.SentinelPasswordFile != "" {
		ps.add("set sentinel password or sentinel password file, not both")
	}
	if p.Password != "" && p.PasswordFile != "" {
		ps.add("set password or password file, not both")
	}
	if p.CAFile != "" && p.TLS == nil {
		ps.add("a CA file is only used with TLS")
	}
	if p.DB < 0 {
		ps.add("db must not be negative, got %d", p.DB)
	} else if p.DB != 0 && len(p.ClusterAddresses) > 0 {
		ps.add("a Redis Cluster has only db 0, got %d", p.DB)
	}
	if p.Timeout != 0 && (p.Timeout < time.Millisecond || p.Timeout > time.Second) {
		ps.add("timeout must be from 1ms to 1s, got %v", p.Timeout)
	}
	switch p.Fallback {
	case "", limits.FallbackLocal, limits.FallbackOpen, limits.FallbackClosed:
	default:
		ps.add("fallback must be %q, %q or %q, got %q", limits.FallbackLocal, limits.FallbackOpen, limits.FallbackClosed, p.Fallback)
	}
	if p.Nodes < 0 || p.Nodes > 10_000 {
		ps.add("nodes must be from 1 to 10000 (or 0 for 1), got %d", p.Nodes)
	}
	if p.Heartbeat > 0 && p.Heartbeat < 10*time.Millisecond {
		ps.add("heartbeat must be at least 10ms (or negative for none), got %v", p.Heartbeat)
	}
	if p.BackoffMin < 0 || p.BackoffMax < 0 {
		ps.add("backoff must not be negative, got %v and %v", p.BackoffMin, p.BackoffMax)
	} else if r := p.resolved(); r.BackoffMax < r.BackoffMin {
		ps.add("backoff max (%v) must be at least backoff min (%v)", r.BackoffMax, r.BackoffMin)
	}
	return ps.err()
}

func (ps *problems) hostPort(what, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		ps.add("%s must be host:port, got %q", what, addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		ps.add("%s has an invalid port, got %q", what, addr)
	}
}

// resolved returns p with its defaults filled in.
func (p StoreParams) resolved() StoreParams {
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Fallback == "" {
		p.Fallback = limits.FallbackLocal
	}
	if p.Nodes == 0 {
		p.Nodes = 1
	}
	if p.Heartbeat == 0 {
		p.Heartbeat = DefaultHeartbeat
	}
	if p.KeyPrefix == "" {
		p.KeyPrefix = DefaultKeyPrefix
	}
	if p.BackoffMin == 0 {
		p.BackoffMin = DefaultBackoffMin
	}
	if p.BackoffMax == 0 {
		p.BackoffMax = max(DefaultBackoffMax, p.BackoffMin)
	}
	return p
}

// Validate reports every problem with p.
func (p LimiterParams) Validate() error {
	var ps problems
	if !validName(p.Name) {
		ps.add("name must be 1 to 64 letters, digits, '.', '_' or '-', got %q", p.Name)
	}
	if p.MaxKeys < 0 {
		ps.add("max keys must not be negative, got %d", p.MaxKeys)
	}
	alg, known := algorithm(p.Algorithm)
	switch {
	case !known:
		ps.add("algorithm must be one of %s, got %q", strings.Join(algorithms(), ", "), p.Algorithm)
	case alg.Shape == limits.ShapeRate:
		okRate := true
		switch {
		case math.IsNaN(p.Rate) || p.Rate <= 0 || p.Rate > 1e9:
			ps.add("%s rate must be in (0, 1e9] per second, got %v", p.Algorithm, p.Rate)
			okRate = false
		}
		if p.Burst < 1 {
			ps.add("%s burst must be positive, got %d", p.Algorithm, p.Burst)
		} else if okRate && float64(p.Burst)*1e9/p.Rate > float64(maxSpan) {
			ps.add("%s burst/rate must be at most %v, got %d/%v", p.Algorithm, maxSpan, p.Burst, p.Rate)
		}
		if p.Limit != 0 || p.Window != 0 {
			ps.add("%s takes rate and burst, not limit and window", p.Algorithm)
		}
	default:
		if top := alg.GlobalMaxLimit; p.Limit < 1 || p.Limit > top {
			ps.add("%s limit must be from 1 to %d, got %d", p.Algorithm, top, p.Limit)
		}
		if p.Window < time.Millisecond || p.Window > maxSpan {
			ps.add("%s window must be from 1ms to %v, got %v", p.Algorithm, maxSpan, p.Window)
		}
		if p.Rate != 0 || p.Burst != 0 {
			ps.add("%s takes limit and window, not rate and burst", p.Algorithm)
		}
	}
	switch p.Sync {
	case "", limits.SyncExact:
		if p.Lease != (LeaseParams{}) {
			ps.add("lease settings need sync %q", limits.SyncLeased)
		}
	case limits.SyncLeased:
		if known && !Leasable(p.Algorithm) {
			ps.add("%q cannot be leased: only %s keep a stock of units that can be cut into blocks (a sliding window's estimate weighs two windows); use sync %q",
				p.Algorithm, strings.Join(limits.AlgorithmNames(func(a *limits.Algorithm) bool { return a.Global == limits.GlobalLeased }), ", "), limits.SyncExact)
		}
		ps.lease(p.Lease)
		if known {
			ps.leaseStock(p, alg)
		}
	default:
		ps.add("sync must be %q or %q, got %q", limits.SyncExact, limits.SyncLeased, p.Sync)
	}
	return ps.err()
}

func (ps *problems) lease(p LeaseParams) {
	if p.Period != 0 && (p.Period < 10*time.Millisecond || p.Period > 10*time.Second) {
		ps.add("lease period must be from 10ms to 10s, got %v", p.Period)
	}
	r := p.resolved()
	if p.TTL != 0 && (p.TTL < 3*r.Period || p.TTL > time.Hour) {
		ps.add("lease ttl must be from 3 periods (%v) to 1h, got %v", 3*r.Period, p.TTL)
	}
	if p.MaxKeys < 0 || p.MaxKeys > 1024 {
		ps.add("lease max keys must be from 1 to 1024 (or 0 for %d), got %d", DefaultLeaseMaxKeys, p.MaxKeys)
	}
}

// leaseStock checks that a leased quota's stock outlasts a lease period: a
// renewal takes at most what the stock holds, so refill beyond a bucket's
// burst between two renewals, and the windows a period spans whole, would
// be lost (the configuration's check refuses the same).
func (ps *problems) leaseStock(p LimiterParams, alg *limits.Algorithm) {
	period := p.Lease.resolved().Period
	if alg.Shape == limits.ShapeRate {
		if need := p.Rate * period.Seconds(); p.Burst > 0 && float64(p.Burst) < need {
			ps.add("%s burst %d is below rate × lease period (%g): refill beyond the burst between two renewals is lost; set burst ≥ %d, or a shorter lease period",
				p.Algorithm, p.Burst, need, int64(math.Ceil(need)))
		}
	} else if p.Window > 0 && p.Window < period {
		ps.add("%s window %v is shorter than the lease period %v: a lease's units lapse at the window's end", p.Algorithm, p.Window, period)
	}
}

// Leasable reports whether an algorithm can run in leased mode
// (limits.SyncLeased): its quota is a stock of units that can be cut into
// blocks.
func Leasable(a Algorithm) bool {
	alg, ok := algorithm(a)
	return ok && alg.Global == limits.GlobalLeased
}

// Validate reports every problem with p.
func (p Params) Validate() error {
	return errors.Join(p.StoreParams.Validate(), p.LimiterParams.Validate())
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) < 0
}
