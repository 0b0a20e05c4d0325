package limits

import (
	"fmt"
	"strings"
	"time"
)

// Spec is what a config gives a rate algorithm: every figure any algorithm
// reads, of which each reads its shape's amount and its knobs (Algorithm).
type Spec struct {
	// Rate is the sustained rate in units per second (ShapeRate).
	Rate float64
	// Limit units per Window (ShapeWindow).
	Limit  int64
	Window time.Duration
	// Burst is a bucket's capacity in units (KnobBurst).
	Burst int64
	// Warmup is the token bucket's warm-up period (KnobWarmup).
	Warmup time.Duration
	// MaxWait is the longest a paced request may be given to wait
	// (KnobMaxWait).
	MaxWait time.Duration
	// Buckets is the number of sub-windows (KnobBuckets).
	Buckets int
}

// Shape is how an algorithm's quota is given.
type Shape uint8

const (
	// ShapeRate: Spec.Rate units per second, which the algorithm's
	// limiters can change at runtime (they are RateSetters).
	ShapeRate Shape = iota
	// ShapeWindow: a whole Spec.Limit per Spec.Window, both of which the
	// algorithm's limiters can change at runtime (they are WindowSetters).
	ShapeWindow
)

// Knobs is a set of the Spec fields an algorithm reads beyond its amount.
type Knobs uint8

// The knobs.
const (
	KnobBurst Knobs = 1 << iota
	KnobWarmup
	KnobMaxWait
	KnobBuckets
)

// Has reports whether k holds every member of x.
func (k Knobs) Has(x Knobs) bool { return k&x == x }

// Global is how far limits/redis can keep an algorithm's state, shared by
// every node (limits/redis's tests check it against what it implements).
type Global uint8

const (
	// GlobalNone: the algorithm decides on this node only.
	GlobalNone Global = iota
	// GlobalExact: a script in Redis decides every request.
	GlobalExact
	// GlobalLeased: exact, or leased in blocks that the nodes decide
	// locally (its quota can be cut into blocks).
	GlobalLeased
)

// Adjuster is a limiter that takes a correction of what it charged: a
// request admitted at one cost whose real cost is known after its work.
// AdjustAt charges n more units at now (n < 0 gives -n back), whatever the
// room left: a charge may leave the limiter owing, which delays what comes
// next; a refund gives back at most what is owed. It reports false, and
// changes nothing, where the limiter cannot (a token bucket with a
// warm-up). Safe for concurrent use.
type Adjuster interface {
	AdjustAt(now time.Time, n int64) bool
}

// Algorithm describes one rate algorithm: its name in configs, what it
// reads of a Spec, what limits/redis can do with it, and how to build it.
// Every algorithm of this package has one, listed by Algorithms; the values
// are immutable.
type Algorithm struct {
	// Name is the algorithm's name in a config ([group.rate] algorithm) and
	// in limits/redis.
	Name string
	// Doc is a one-line description.
	Doc   string
	Shape Shape
	Knobs Knobs
	// Paced: an admitted request waits out Result.Delay before it goes on.
	Paced bool
	// Adjusts: its limiters, and Keyed over them, correct a request's cost
	// after the fact (Adjuster), but for a token bucket with a warm-up.
	Adjusts bool
	// Global is what limits/redis implements for it (under the same Name);
	// GlobalMaxLimit, when not 0, is the highest Spec.Limit it can keep in
	// Redis.
	Global         Global
	GlobalMaxLimit int64
	// Defaults holds the default of each knob of Knobs that has a fixed
	// one (Buckets, MaxWait): what a config's 0 stands for. A burst's
	// default is a second of the rate, for every algorithm with KnobBurst.
	Defaults Spec
	// FreshAfter is how long, in seconds, a key's state left unused takes
	// to become that of a new key under s (after it, forgetting the key
	// changes nothing): a window, two for an estimate that reads the
	// previous one, the time to refill a bucket, the longest wait. 0 when s
	// has no amount.
	FreshAfter func(s Spec) float64
	// New builds a limiter from s, or returns every problem with s.
	New func(s Spec) (Limiter, error)
}

// WithDefaults returns s with a's Defaults in its zero knobs.
func (a *Algorithm) WithDefaults(s Spec) Spec {
	if s.Buckets == 0 {
		s.Buckets = a.Defaults.Buckets
	}
	if s.MaxWait == 0 {
		s.MaxWait = a.Defaults.MaxWait
	}
	return s
}

// windowFresh is FreshAfter of an algorithm that forgets a key after one
// window.
func windowFresh(s Spec) float64 { return s.Window.Seconds() }

// bucketFresh is FreshAfter of a bucket: the time to refill it, burst /
// rate.
func bucketFresh(s Spec) float64 {
	if s.Rate <= 0 {
		return 0
	}
	return float64(max(s.Burst, 1)) / s.Rate
}

// algorithms is the registry, in the order errors and docs list them.
// Adding an algorithm: its file defines its Algorithm, and one line here.
var algorithms = [...]*Algorithm{
	&fixedWindowAlgorithm,
	&slidingLogAlgorithm,
	&slidingWindowAlgorithm,
	&slidingBucketsAlgorithm,
	&tokenBucketAlgorithm,
	&leakyBucketAlgorithm,
	&leakyQueueAlgorithm,
}

// Algorithms returns every algorithm, in a stable order. The caller must not
// modify them.
func Algorithms() []*Algorithm { return algorithms[:] }

// AlgorithmNames returns the names of the algorithms that keep (when the
// function is nil) or that match keep, in the order of Algorithms.
func AlgorithmNames(keep func(*Algorithm) bool) []string {
	var names []string
	for _, a := range algorithms {
		if keep == nil || keep(a) {
			names = append(names, a.Name)
		}
	}
	return names
}

// LookupAlgorithm returns the algorithm named name.
func LookupAlgorithm(name string) (*Algorithm, bool) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, true
		}
	}
	return nil, false
}

// New builds a limiter of the algorithm named name from s.
func New(name string, s Spec) (Limiter, error) {
	a, ok := LookupAlgorithm(name)
	if !ok {
		return nil, fmt.Errorf("limits: unknown algorithm %q (one of %s)", name, strings.Join(AlgorithmNames(nil), ", "))
	}
	return a.New(s)
}

// The setters a limiter may have, by what they change at runtime (see the
// package doc, "Runtime changes"). Safe for concurrent use with decisions.
type (
	// RateSetter changes the rate, in units per second.
	RateSetter interface{ SetRate(perSecond float64) error }
	// BurstSetter changes a bucket's capacity, in units.
	BurstSetter interface{ SetBurst(units int64) error }
	// MaxWaitSetter changes the longest wait a paced request may be given.
	MaxWaitSetter interface {
		SetMaxWait(d time.Duration) error
	}
	// WindowSetter changes the limit per window and the window.
	WindowSetter interface {
		SetLimit(units int64) error
		SetWindow(d time.Duration) error
	}
)

// Retune changes l's figures to s's, through every setter l has, in the
// order rate, burst, max wait, limit, window; figures without a setter
// (warm-up, buckets) stay. It returns every setter's error.
func Retune(l Limiter, s Spec) []error {
	var errs []error
	try := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if a, ok := l.(RateSetter); ok {
		try(a.SetRate(s.Rate))
	}
	if a, ok := l.(BurstSetter); ok {
		try(a.SetBurst(s.Burst))
	}
	if a, ok := l.(MaxWaitSetter); ok {
		try(a.SetMaxWait(s.MaxWait))
	}
	if a, ok := l.(WindowSetter); ok {
		try(a.SetLimit(s.Limit))
		try(a.SetWindow(s.Window))
	}
	return errs
}
