package gate

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// queueRun is what a run of driveService saw.
type queueRun struct {
	arrived, refused, would int
	limits                  []int // the limit after each tick
	maxBacklog              int   // the most requests the service held at once
}

// workerHeap is the instants the service's workers are next free, least
// first.
type workerHeap []time.Time

func (h workerHeap) Len() int           { return len(h) }
func (h workerHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h workerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *workerHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *workerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// testService is the service driveService sends requests to: workers in
// front of a FIFO queue without bound, each request taking mean (its own
// service time, lognormal of sigma 0.3 about it); the first slowFirst
// requests admitted take slowBy more (a cold start: connections being
// opened, a machine busy with them).
type testService struct {
	workers   int
	mean      time.Duration
	slowFirst int
	slowBy    time.Duration
}

// lab16 is the lab's backend in miniature: 16 workers of 10 ms, C = 1,600/s.
var lab16 = testService{workers: 16, mean: 10 * time.Millisecond}

// driveService sends Poisson arrivals at perSec (seeded) for d through g on
// its fake clock to svc (its service times seeded). Every admitted request
// reaches the service and ends (Done) when the service is done with it; the
// control loop ticks every interval.
func driveService(t *testing.T, g *Gate, clk *fakeClock, perSec float64, d time.Duration, svc testService, seed uint64) queueRun {
	t.Helper()
	arrivals, services := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 2))
	var run queueRun
	workers := make(workerHeap, svc.workers)
	start := clk.Now()
	for i := range workers {
		workers[i] = start
	}
	type call struct {
		end time.Time
		p   Pass
	}
	var calls []call // by end
	interval := g.Config().Interval
	nextTick := start.Add(interval)
	until := func(at time.Time) {
		for {
			switch {
			case len(calls) > 0 && !calls[0].end.After(at) && calls[0].end.Before(nextTick):
				clk.Set(calls[0].end)
				calls[0].p.Done(Success)
				calls = calls[1:]
			case !nextTick.After(at):
				clk.Set(nextTick)
				g.Tick(nextTick)
				st, _ := g.Group("api")
				run.limits = append(run.limits, st.Limit)
				nextTick = nextTick.Add(interval)
			default:
				clk.Set(at)
				return
			}
		}
	}
	for at := start; at.Before(start.Add(d)); at = at.Add(time.Duration(arrivals.ExpFloat64() / perSec * 1e9)) {
		until(at)
		run.arrived++
		p, _, ok := g.Enter(request("/"))
		if !ok {
			run.refused++
			continue
		}
		if p.Shadowed() != 0 {
			run.would++
		}
		free := heap.Pop(&workers).(time.Time)
		s := time.Duration(float64(svc.mean) * math.Exp(0.3*services.NormFloat64()-0.045)) // mean svc.mean
		if run.arrived-run.refused <= svc.slowFirst {
			s += svc.slowBy
		}
		if free.Before(at) {
			free = at
		}
		end := free.Add(s)
		heap.Push(&workers, end)
		i, _ := slices.BinarySearchFunc(calls, end, func(c call, e time.Time) int { return c.end.Compare(e) })
		calls = slices.Insert(calls, i, call{end, p})
		run.maxBacklog = max(run.maxBacklog, len(calls))
	}
	until(start.Add(d))
	return run
}

// TestShadowLearnsWhatEnforcementWould (issue 28): one group, law target,
// p99 ≤ 100 ms, in front of a service of 16 workers of 10 ms (C = 1,600/s)
// with a queue of its own, at 1,500/s, 1,650/s and 4,800/s for 10 s,
// enforcing and in shadow (fresh gates, the same seeded arrivals and
// service times). In shadow every request reaches the service, whose queue
// grows without bound past C; the shadowed law must not learn from that:
// at seeds 1–7, its limit over the second half is within 25 % of the
// enforcing law's (15 % at 3×, where issue 27's law cuts to the knee,
// x·1.25·its baseline, and the lab's ±25 % must leave room for the
// machine; 35 % at a cold start slowed as below, see BENCHMARKS), and its
// would-be refusals within 15 % of enforcement's refusals (within 3 % of
// the arrivals where those are a few per cent). Before, at 1,650/s the
// shadowed law cut to 23 where enforcement's held 121 and counted 76 % of
// the requests as would-be refusals where enforcement refused 3.6 %; at
// 4,800/s, 99.5 % against 67 %. With issue 27's knee (law5), the model's
// first interval, its servers not yet sized (C unknown: none wait), gave
// the law a baseline without the queue enforcement's first interval has,
// and at 3× shadow held 0.81–0.88 of enforcement's limit in five seeds of
// seven.
func TestShadowLearnsWhatEnforcementWould(t *testing.T) {
	conf := func(mode string) string {
		return `
[[group]]
name = "api"
mode = "` + mode + `"
  [group.concurrency]
  law = "target"
  [group.targets]
  latency = "100ms"
  quantile = 0.99
  [group.queue]
  max = 0
`
	}
	for _, c := range []struct {
		name   string
		perSec float64
		svc    testService
		within float64 // the learned limit's bound, relative
	}{{"1x", 1500, lab16, 0.25}, {"at C", 1650, lab16, 0.25}, {"3x", 4800, lab16, 0.15},
		// The first six requests 40 ms slower: at 3× only the first ~20
		// requests of a shadowed group find the real service no more
		// loaded than the model, so they alone measure its latency, and
		// the six hold six of the 16 workers, so that the rest of those
		// ~20 wait: the median of the sample is 1.2–1.7 times the
		// service's own.
		{"3x cold", 4800, testService{workers: 16, mean: 10 * time.Millisecond, slowFirst: 6, slowBy: 40 * time.Millisecond}, 0.35}} {
		for seed := uint64(1); seed <= 7; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", c.name, seed), func(t *testing.T) {
				ge, ce := newGate(t, conf("enforce"))
				gs, cs := newGate(t, conf("shadow"))
				e := driveService(t, ge, ce, c.perSec, 10*time.Second, c.svc, seed)
				s := driveService(t, gs, cs, c.perSec, 10*time.Second, c.svc, seed)
				le, ls := meanLimit(e.limits[len(e.limits)/2:]), meanLimit(s.limits[len(s.limits)/2:])
				t.Logf("enforce: refused %d of %d (%.1f %%), limit over the second half %.1f, service backlog ≤ %d",
					e.refused, e.arrived, 100*float64(e.refused)/float64(e.arrived), le, e.maxBacklog)
				t.Logf("shadow: would refuse %d of %d (%.1f %%), limit over the second half %.1f, service backlog ≤ %d",
					s.would, s.arrived, 100*float64(s.would)/float64(s.arrived), ls, s.maxBacklog)
				if s.refused != 0 {
					t.Fatalf("shadow refused %d", s.refused)
				}
				if r := ls / le; r < 1-c.within || r > 1+c.within {
					t.Errorf("learned limit: shadow %.1f, enforce %.1f (ratio %.2f), want within %.0f %%", ls, le, r, 100*c.within)
				}
				// A few per cent refused near C move by half with the limit's
				// course: there the two must agree within 3 % of the arrivals.
				if e.refused > e.arrived/10 {
					if r := float64(s.would) / float64(e.refused); r < 0.85 || r > 1.15 {
						t.Errorf("would-be refusals %d against enforcement's %d (ratio %.2f), want within 15 %%", s.would, e.refused, r)
					}
				} else if d := s.would - e.refused; d > e.arrived*3/100 || -d > e.arrived*3/100 {
					t.Errorf("would-be refusals %d against enforcement's %d, of %d: want within 3 %% of the arrivals", s.would, e.refused, e.arrived)
				}
			})
		}
	}
}

func meanLimit(ls []int) float64 {
	var sum float64
	for _, l := range ls {
		sum += float64(l)
	}
	return sum / float64(max(1, len(ls)))
}

// TestEnforcementModel: the model of enforcement on its own, with a known
// service (C = 1,000/s, s = 10 ms: W = 10) and a limit of 20 without a
// queue: a burst of 30 arrivals at one instant gets 20 slots and 10
// would-be refusals; the 20 end over 20 ms (10 start at once, the next 10
// as the first end); nothing is left after 40 ms. An arrival of a steady
// run allocates nothing.
func TestEnforcementModel(t *testing.T) {
	var m enforcement
	m.capacity = 1000
	m.service = adaptive.Latency{Min: 10 * time.Millisecond, Mean: 10 * time.Millisecond, P50: 10 * time.Millisecond,
		P90: 10 * time.Millisecond, P95: 10 * time.Millisecond, P99: 10 * time.Millisecond, P999: 10 * time.Millisecond}
	m.serviceAt = 1
	qb := adaptive.QueueBound{}
	admitted, refused := 0, 0
	for range 30 {
		mark := m.arrive(0, adaptive.Default, 20, 0, &qb, 0)
		switch {
		case mark.why == adaptive.RejectConcurrency:
			refused++
		case mark.why == adaptive.RejectNone && mark.within:
			admitted++
		default:
			t.Fatalf("arrival: %+v", mark)
		}
	}
	if admitted != 20 || refused != 10 {
		t.Fatalf("admitted %d, refused %d; want 20 and 10", admitted, refused)
	}
	for _, c := range []struct {
		at   time.Duration
		left int
	}{{9 * time.Millisecond, 20}, {10 * time.Millisecond, 10}, {19 * time.Millisecond, 10}, {20 * time.Millisecond, 0}} {
		m.advance(int64(c.at), 20)
		if m.n != c.left {
			t.Errorf("at %v: %d in the model's service, want %d", c.at, m.n, c.left)
		}
	}
	now := int64(40 * time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() {
		now += int64(time.Millisecond)
		m.arrive(now, adaptive.Default, 20, 0, &qb, 0)
	}); n != 0 {
		t.Errorf("an arrival allocates %v times", n)
	}
}

// TestServiceTime: the model draws service times of the measured mean,
// whatever the shape of the quantiles.
func TestServiceTime(t *testing.T) {
	l := adaptive.Latency{Min: 3 * time.Millisecond, Mean: 10 * time.Millisecond, P50: 8 * time.Millisecond,
		P90: 15 * time.Millisecond, P95: 20 * time.Millisecond, P99: 40 * time.Millisecond, P999: 80 * time.Millisecond}
	var sum time.Duration
	const n = 100000
	for i := range n {
		sum += serviceTime(&l, (float64(i)+0.5)/n)
	}
	if mean := sum / n; mean < 9900*time.Microsecond || mean > 10100*time.Microsecond {
		t.Errorf("mean service time drawn %v, want the measured 10ms", mean)
	}
	if a, b := serviceTime(&l, 0.5), serviceTime(&l, 0.99); a >= b {
		t.Errorf("median %v not below p99 %v", a, b)
	}
}

// TestServiceLatencyRecovers: the model's measure of the service's own
// latency at a cold start beyond C, where clean requests are few. The
// first 20, six of them slowed by 40 ms (connections being opened), give
// the median, 10 ms, not their mean of 22 ms; twelve clean requests an
// interval (fewer than minService) are gathered over intervals until there
// are minService, and the service is then measured on them: its mean and
// quantiles, and the law is given the intervals' clean latency. Before,
// the model took the mean of the interval's clean requests, 22 ms, and
// measured the service only on an interval with minService of them.
func TestServiceLatencyRecovers(t *testing.T) {
	var m enforcement
	ms := time.Millisecond
	clean := shadowMark{slotless: true, within: true, clean: true, free: true}
	for i := range 20 {
		l := 10 * ms
		if i < 6 {
			l += 40 * ms
		}
		m.leave(clean, l, Success)
	}
	if got := m.service.Mean; got < 9*ms || got > 11*ms {
		t.Fatalf("provisional service latency %v, want the median 10ms", got)
	}
	interval := 250 * ms
	var s adaptive.Sample
	for tick := 1; tick <= 10; tick++ {
		for i := range 12 {
			m.leave(clean, 8*ms+time.Duration(i)*ms/3, Success) // 8–11.7 ms
		}
		s = adaptive.Sample{Interval: interval, Successes: 400}
		m.tick(int64(tick)*int64(interval), 40, &s)
		if n := 20 + 12*tick; n < minService && m.serviceAt != 0 {
			t.Fatalf("tick %d: the service measured on %d clean requests, want %d", tick, n, minService)
		}
	}
	if m.serviceAt == 0 {
		t.Fatalf("after 140 clean requests over 10 intervals the service is still not measured (%v)", m.service.Mean)
	}
	if got := m.service.Mean; got < 10*ms || got > 16*ms {
		t.Errorf("service latency %v, want the mean of the 20 + 12×7 gathered, 12.2ms", got)
	}
	if m.service.P99 <= m.service.P50 {
		t.Errorf("service quantiles p50 %v, p99 %v: want the distribution measured", m.service.P50, m.service.P99)
	}
	if got := s.Latency.Mean; got < 9*ms || got > 11*ms {
		t.Errorf("the law's latency %v, want the interval's clean mean, 9.8ms", got)
	}
}

// TestCapacityAveragesBursts: the model's capacity is the peak of
// one-second averages of the real successes, so completions handed on in
// bursts by a busy machine (as the lab's at 3× in shadow, 300 then 550
// and 500 in a quarter-second) are not taken for capacity: a service
// completing 1,600/s in each second is given C = 1,600. Before, the peak
// of half-second averages made it 2,100.
func TestCapacityAveragesBursts(t *testing.T) {
	var m enforcement
	interval := 250 * time.Millisecond
	for i, n := range []int{250, 300, 550, 500, 250, 300, 550, 500, 250, 300, 550, 500} {
		s := adaptive.Sample{Interval: interval, Successes: n}
		m.tick(int64(i+1)*int64(interval), 40, &s)
	}
	if m.capacity < 1550 || m.capacity > 1650 {
		t.Errorf("capacity %.0f/s, want 1,600", m.capacity)
	}
}

// TestModelServersAreFIFO: the model's service is a FIFO queue of W
// servers: with W = 2, a long call and a short one admitted at once, a
// third waits for the first server free, the short one's, not for the
// call W admissions ahead of it (the long one). Before, it started when
// the long one ended.
func TestModelServersAreFIFO(t *testing.T) {
	ms := time.Millisecond
	m := enforcement{capacity: 200, service: adaptive.Latency{Min: 5 * ms, Mean: 10 * ms, P50: 5 * ms,
		P90: 5 * ms, P95: 5 * ms, P99: 5 * ms, P999: 50 * ms}} // W = 200/s × 10 ms = 2
	long, short := serviceTime(&m.service, 1), serviceTime(&m.service, 0)
	a, b, c := modelCall{u: 1}, modelCall{u: 0}, modelCall{u: 0}
	m.schedule(&a)
	m.n = 1
	m.schedule(&b)
	m.n = 2
	m.schedule(&c)
	if a.end != int64(long) || b.end != int64(short) {
		t.Fatalf("the first two end at %v and %v, want %v and %v", time.Duration(a.end), time.Duration(b.end), long, short)
	}
	if want := 2 * short; c.end != int64(want) {
		t.Errorf("the third ends at %v, want %v: when the short one's server is free (%v), then its own %v",
			time.Duration(c.end), want, short, short)
	}
}

// TestServiceMeasuredOnFreeRequests: the service's own latency (W = C·s)
// is measured on the clean requests that found a server of the real
// service free (fewer than W in flight), not on those that found its
// servers busy and waited in its queue: 100 of 10 ms that found none in
// flight and 100 of 60 ms that found 50 (W = 10) measure 10 ms. Before,
// every clean request counted: 35 ms, and W 35.
func TestServiceMeasuredOnFreeRequests(t *testing.T) {
	ms := time.Millisecond
	m := enforcement{capacity: 1000, serviceAt: 1, ticks: 1000, service: adaptive.Latency{Min: 10 * ms,
		Mean: 10 * ms, P50: 10 * ms, P90: 10 * ms, P95: 10 * ms, P99: 10 * ms, P999: 10 * ms}}
	qb := adaptive.QueueBound{}
	var marks []shadowMark
	for i := range 200 {
		inFlight := 0
		if i >= 100 {
			inFlight = 50 // ≤ the model's 100 in service: clean, but no server free
		}
		marks = append(marks, m.arrive(0, adaptive.Default, 1000, 0, &qb, inFlight))
	}
	for i, mark := range marks {
		if !mark.clean {
			t.Fatalf("arrival %d not clean", i)
		}
		l := 10 * ms
		if i >= 100 {
			l = 60 * ms
		}
		m.leave(mark, l, Success)
	}
	s := adaptive.Sample{Interval: 250 * ms, Successes: 250}
	m.tick(int64(250*ms), 1000, &s)
	if got := m.service.Mean; got < 9*ms || got > 11*ms {
		t.Errorf("the service's own latency %v, want 10ms (those that found a server free)", got)
	}
}
