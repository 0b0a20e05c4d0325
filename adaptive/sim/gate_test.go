package sim

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// gateHarness is an engine whose backend never finishes on its own (a huge
// service time), so a test decides when slots free up.
type gateHarness struct {
	t *testing.T
	e *engine
}

func newGateHarness(t *testing.T, limit, queue int, order adaptive.Order) *gateHarness {
	t.Helper()
	sc := Scenario{Seed: 1, Duration: time.Hour, SLO: time.Second, Load: []Segment{{X: 0}},
		Service: Service{Workers: 1000, Dist: Dist{Kind: Lognormal, Mean: time.Hour}},
		Clients: Clients{Timeout: time.Hour},
		Gate:    Gate{Queue: queue, Order: order}, Tenants: []float64{1, 1, 1}}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	sc = sc.withDefaults()
	law, err := adaptive.NewFixed(adaptive.FixedParams{Bounds: adaptive.Bounds{Initial: limit}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(&sc, law)
	if err != nil {
		t.Fatal(err)
	}
	if order == adaptive.OrderLIFO {
		e.g.lifo = true
	}
	return &gateHarness{t: t, e: e}
}

// arrive sends a request of priority p and tenant k at time at; it returns the
// request's slot id.
func (h *gateHarness) arrive(at time.Duration, p adaptive.Priority, k uint8) int32 {
	h.e.now = int64(at)
	id := h.e.alloc()
	r := &h.e.reqs[id]
	*r = request{gen: r.gen, prio: p, tenant: k, first: h.e.now}
	h.e.attempt(id)
	return id
}

// finish completes in-service request id now.
func (h *gateHarness) finish(at time.Duration, id int32) {
	h.e.now = int64(at)
	h.e.done(id, h.e.reqs[id].gen)
}

func (h *gateHarness) state(id int32) reqState { return h.e.reqs[id].state }

func (h *gateHarness) rejections() [adaptive.NumRejections]int {
	return h.e.rec.phases[0].rejections
}

func TestGateFIFOAndLIFO(t *testing.T) {
	for _, tc := range []struct {
		order adaptive.Order
		next  int // which waiter gets the freed slot
	}{{adaptive.OrderFIFO, 0}, {adaptive.OrderLIFO, 2}} {
		h := newGateHarness(t, 1, 10, tc.order)
		a := h.arrive(0, adaptive.Default, 0)
		var w []int32
		for i := 0; i < 3; i++ {
			w = append(w, h.arrive(time.Duration(i+1)*time.Millisecond, adaptive.Default, 0))
		}
		if h.state(a) != stServing || h.e.g.waiting != 3 {
			t.Fatalf("%v: first request %v, %d waiting", tc.order, h.state(a), h.e.g.waiting)
		}
		h.finish(5*time.Millisecond, a)
		for i, id := range w {
			want := stWaiting
			if i == tc.next {
				want = stServing
			}
			if h.state(id) != want {
				t.Errorf("%v: waiter %d is %v, want %v", tc.order, i, h.state(id), want)
			}
		}
	}
}

func TestGatePriorityAndEviction(t *testing.T) {
	h := newGateHarness(t, 1, 2, adaptive.OrderFIFO)
	a := h.arrive(0, adaptive.Default, 0)
	s1 := h.arrive(1*time.Millisecond, adaptive.Sheddable, 0)
	s2 := h.arrive(2*time.Millisecond, adaptive.Sheddable, 0)
	// Full queue: a higher priority evicts the lowest-priority newest waiter.
	c := h.arrive(3*time.Millisecond, adaptive.Critical, 0)
	if h.state(s2) != stFree || h.state(s1) != stWaiting || h.state(c) != stWaiting {
		t.Fatalf("eviction: s1 %v s2 %v critical %v", h.state(s1), h.state(s2), h.state(c))
	}
	// Full queue, no lower priority to evict: the newcomer is refused.
	x := h.arrive(4*time.Millisecond, adaptive.Sheddable, 0)
	if h.state(x) != stFree {
		t.Fatalf("a sheddable newcomer to a full queue is %v", h.state(x))
	}
	if got := h.rejections()[adaptive.RejectQueueFull]; got != 2 {
		t.Errorf("%d queue_full rejections, want 2 (the evicted and the refused)", got)
	}
	// The freed slot goes to the critical waiter, though it came last.
	h.finish(5*time.Millisecond, a)
	if h.state(c) != stServing || h.state(s1) != stWaiting {
		t.Errorf("after a release: critical %v, sheddable %v", h.state(c), h.state(s1))
	}
}

func TestGateWaitBoundAndLimitChanges(t *testing.T) {
	h := newGateHarness(t, 2, 10, adaptive.OrderFIFO)
	h.e.g.bound = adaptive.QueueBound{Wait: 5 * time.Millisecond, Critical: 100 * time.Millisecond}
	a := h.arrive(0, adaptive.Default, 0)
	h.arrive(0, adaptive.Default, 0)
	w := h.arrive(time.Millisecond, adaptive.Default, 0)
	c := h.arrive(time.Millisecond, adaptive.Critical, 0)
	// The waiter's bound passes: queue_timeout; the critical one waits on.
	for h.e.ev.len() > 0 && h.e.ev.ev[0].kind != evQueueTimeout {
		h.e.ev.pop()
	}
	ev := h.e.ev.pop()
	if ev.id != w || time.Duration(ev.at) != 6*time.Millisecond {
		t.Fatalf("first timeout is for %d at %v, want %d at 6ms", ev.id, time.Duration(ev.at), w)
	}
	h.e.now = ev.at
	h.e.queueTimeout(ev.id, ev.gen)
	if h.state(w) != stFree || h.rejections()[adaptive.RejectQueueTimeout] != 1 || h.state(c) != stWaiting {
		t.Fatalf("after the timeout: waiter %v, critical %v", h.state(w), h.state(c))
	}
	// Lowering the limit preempts nothing; raising it serves waiters at once.
	h.e.setLimit(1)
	if h.e.g.inflight != 2 {
		t.Fatalf("lowering the limit dropped in-flight requests: %d", h.e.g.inflight)
	}
	h.finish(7*time.Millisecond, a)
	if h.state(c) != stWaiting {
		t.Fatalf("a release under the lowered limit admitted a waiter")
	}
	h.e.setLimit(3)
	if h.state(c) != stServing || h.e.overshoots != 0 {
		t.Fatalf("raising the limit: critical %v, overshoots %d", h.state(c), h.e.overshoots)
	}
}

func TestGateFloorRateAndFairShare(t *testing.T) {
	h := newGateHarness(t, 4, 10, adaptive.OrderFIFO)
	h.e.g.floor = adaptive.Floor{Priority: adaptive.Default, Reason: adaptive.RejectCPU}
	if id := h.arrive(0, adaptive.Sheddable, 0); h.state(id) != stFree || h.rejections()[adaptive.RejectCPU] != 1 {
		t.Fatal("a sheddable request passed a cpu floor")
	}
	h.e.g.floor = adaptive.Floor{}

	h.e.g.fair = true
	for i := 0; i < 3; i++ {
		h.arrive(time.Millisecond, adaptive.Default, 0)
	}
	h.arrive(time.Millisecond, adaptive.Default, 1) // the group is now at its limit of 4
	// (A refused request's slot is reused at once: check each state right away.)
	if greedy := h.arrive(2*time.Millisecond, adaptive.Default, 0); h.state(greedy) != stFree || h.rejections()[adaptive.RejectFairShare] != 1 {
		t.Errorf("tenant 0 holding 3 of 4 slots was not turned away: %v", h.state(greedy))
	}
	if polite := h.arrive(2*time.Millisecond, adaptive.Default, 2); h.state(polite) != stWaiting {
		t.Errorf("tenant 2 holding none should queue, is %v", h.state(polite))
	}

	h = newGateHarness(t, 100, 10, adaptive.OrderFIFO)
	h.e.g.rateOn = true
	var err error
	if h.e.g.bucket, err = newTokenBucket(1000, 10); err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for i := 0; i < 30; i++ {
		if id := h.arrive(0, adaptive.Default, 0); h.state(id) == stServing {
			admitted++
		}
	}
	if admitted != 10 || h.rejections()[adaptive.RejectRate] != 20 {
		t.Errorf("rate: %d admitted, %d refused, want 10 and 20", admitted, h.rejections()[adaptive.RejectRate])
	}
	if id := h.arrive(5*time.Millisecond, adaptive.Default, 0); h.state(id) != stServing {
		t.Error("no token 5 ms later at 1000/s")
	}
}
