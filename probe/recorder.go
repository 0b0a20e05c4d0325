package probe

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/hist"
)

// RecorderParams configures a Recorder. The zero value of every field means
// its default.
type RecorderParams struct {
	// Window is how far back a Snapshot looks. Default 5 s.
	Window time.Duration
	// SubWindows is how many sub-windows the window is cut into; the window
	// slides by one sub-window of Window/SubWindows at a time. Default 20
	// (250 ms sub-windows, the control loop's default interval).
	SubWindows int
	// MinRTTWindow is how far back Snapshot.MinRTT looks; at least Window.
	// Default 60 s.
	MinRTTWindow time.Duration
	// Stripes is the number of shards the hot path spreads its writes over,
	// one per P (runtime.GOMAXPROCS), rounded up to a power of two. Each costs
	// about 16 KiB. If GOMAXPROCS later grows past it, Ps share stripes:
	// still correct, only slower. Default: GOMAXPROCS at construction.
	Stripes int
	// Start is the instant sub-window 0 begins, usually the time the recorder
	// was created. Zero means the time passed to the first Snapshot; samples
	// recorded before that count in sub-window 0, so the first window's
	// Throughput reads high.
	Start time.Time
}

const (
	defaultWindow       = 5 * time.Second
	defaultSubWindows   = 20
	defaultMinRTTWindow = 60 * time.Second
	maxStripes          = 256
	maxSubWindows       = 10000
	maxMinRTTSlots      = 1 << 20
)

// withDefaults returns p with its zero fields set to their defaults.
func (p RecorderParams) withDefaults() RecorderParams {
	if p.Window == 0 {
		p.Window = defaultWindow
	}
	if p.SubWindows == 0 {
		p.SubWindows = defaultSubWindows
	}
	if p.MinRTTWindow == 0 {
		p.MinRTTWindow = max(defaultMinRTTWindow, p.Window)
	}
	if p.Stripes == 0 {
		p.Stripes = min(runtime.GOMAXPROCS(0), maxStripes)
	}
	return p
}

// Validate reports every problem with p, after defaults are applied.
func (p RecorderParams) Validate() error {
	p = p.withDefaults()
	var errs []error
	if p.Window < 0 {
		errs = append(errs, fmt.Errorf("probe: window must be positive, got %v", p.Window))
	}
	if p.SubWindows < 0 || p.SubWindows > maxSubWindows {
		errs = append(errs, fmt.Errorf("probe: sub-windows must be in 1..%d, got %d", maxSubWindows, p.SubWindows))
	}
	if p.Window > 0 && p.SubWindows > 0 && p.Window/time.Duration(p.SubWindows) < time.Millisecond {
		errs = append(errs, fmt.Errorf("probe: sub-window %v/%d is shorter than 1ms", p.Window, p.SubWindows))
	}
	if p.MinRTTWindow < 0 {
		errs = append(errs, fmt.Errorf("probe: min RTT window must be positive, got %v", p.MinRTTWindow))
	} else if p.MinRTTWindow < p.Window {
		errs = append(errs, fmt.Errorf("probe: min RTT window %v must be at least the window %v", p.MinRTTWindow, p.Window))
	} else if p.Window > 0 && p.SubWindows > 0 && p.SubWindows <= maxSubWindows {
		if sub := p.Window / time.Duration(p.SubWindows); sub > 0 && p.MinRTTWindow/sub > maxMinRTTSlots {
			errs = append(errs, fmt.Errorf("probe: min RTT window %v spans more than %d sub-windows of %v", p.MinRTTWindow, maxMinRTTSlots, sub))
		}
	}
	if p.Stripes < 0 || p.Stripes > maxStripes {
		errs = append(errs, fmt.Errorf("probe: stripes must be in 1..%d, got %d", maxStripes, p.Stripes))
	}
	return errors.Join(errs...)
}

// Recorder measures request durations and outcomes over a sliding window.
//
// The hot path (Record, Drop, Ignore, ObserveInflight) is safe for concurrent
// use by any number of goroutines; it reads no clock, takes no lock and does
// not allocate: it adds to atomic counters in the stripe of the P it runs
// on. Snapshot, which rotates the window and reads it, is meant for one
// goroutine (the control loop) but is safe to call concurrently: it takes a
// mutex that the hot path never touches.
//
// Memory: about 16 KiB per stripe, 16 KiB of window totals, and per
// sub-window 16 bytes per distinct bucket its samples fell in.
//
// Durations are kept in a log-linear histogram (see MaxTracked) that reports
// any quantile within 1/128 of a sample's value. A Recorder is reusable for
// any duration: the gate keeps one for request latency and one for queue wait.
//
// The zero value is not usable; call NewRecorder.
type Recorder struct {
	stripes []stripe
	mask    uint32

	mu sync.Mutex
	w  window // guarded by mu
}

// NewRecorder returns a Recorder configured by p.
func NewRecorder(p RecorderParams) (*Recorder, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	n := 1 << bits.Len(uint(p.Stripes-1)) // round up to a power of two
	r := &Recorder{stripes: make([]stripe, n), mask: uint32(n - 1)}
	for i := range r.stripes {
		r.stripes[i].init()
	}
	r.w.init(p)
	return r, nil
}

// stripe returns the stripe of the P (the scheduler's per-CPU context) the
// caller runs on, so that goroutines running at the same time on different
// CPUs write different cache lines. Being preempted right after the lookup
// only means sharing a stripe for one write; every field is atomic.
func (r *Recorder) stripe() *stripe {
	p := procPin()
	procUnpin()
	return &r.stripes[uint32(p)&r.mask]
}

// Record counts a successful request that took d. Negative durations count
// as 0; durations over MaxTracked count as MaxTracked in quantiles but keep
// their exact value in Max and Mean.
func (r *Recorder) Record(d time.Duration) {
	v := uint64(max(d, 0))
	s := r.stripe()
	s.count(hist.Of(v))
	s.sum.Add(v)
	if v < s.min.Load() {
		s.lowerMin(v)
	}
	if v > s.max.Load() {
		s.raiseMax(v)
	}
}

// Drop counts a request that failed in a way that signals overload (timeout,
// upstream 5xx or connection error). It records no duration.
func (r *Recorder) Drop() { r.stripe().drops.Add(1) }

// Ignore counts a request that carries no signal (client cancelled, 4xx).
func (r *Recorder) Ignore() { r.stripe().ignored.Add(1) }

// ObserveInflight notes that n requests were in flight; Snapshot reports the
// highest n observed during the window.
func (r *Recorder) ObserveInflight(n int) {
	s := r.stripe()
	if int64(n) > s.inflight.Load() {
		s.raiseInflight(int64(n))
	}
}

// Snapshot rotates the window to now, folds in everything recorded since the
// previous call and returns the window's figures. Time is data: now need not
// be the wall clock, so tests drive rotation by passing instants. A now
// earlier than a previous one is treated as that one.
//
// Samples are attributed to the sub-window current when Snapshot drains them,
// so call it at least once per sub-window. In steady state it does not
// allocate. The returned value is a copy, owned by the caller.
func (r *Recorder) Snapshot(now time.Time) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.rotate(now)
	r.w.drain(r.stripes)
	return r.w.snapshot()
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1, clamped) of the durations in
// the window as of the last Snapshot, or 0 when it holds none or q is NaN.
// It uses the nearest-rank definition: the smallest recorded value v such
// that at least q of the samples are ≤ v, within 1/128 of v.
func (r *Recorder) Quantile(q float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if math.IsNaN(q) {
		return 0
	}
	var out [1]time.Duration
	r.w.quantiles([]float64{q}, out[:])
	return out[0]
}
