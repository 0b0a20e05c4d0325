package gate

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// recordingObserver keeps what it is told, as lines.
type recordingObserver struct {
	mu    sync.Mutex
	done  []string
	waits []time.Duration
}

func (o *recordingObserver) ObserveDone(group string, oc Outcome, latency, wait time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, group+" "+oc.String()+" "+latency.String()+" after "+wait.String())
}

func (o *recordingObserver) ObserveQueueWait(group string, wait time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waits = append(o.waits, wait)
}

func TestObserverSeesEveryOutcome(t *testing.T) {
	clk := newFakeClock()
	ob := &recordingObserver{}
	g, err := New(Params{Config: config(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 5
`), Clock: clk, Observer: ob, Resources: NoResources})
	if err != nil {
		t.Fatal(err)
	}
	a := mustEnter(t, g, request("/"))
	b := mustEnter(t, g, request("/"))
	c := mustEnter(t, g, request("/"))
	clk.Advance(30 * time.Millisecond)
	a.Done(Success)
	clk.Advance(10 * time.Millisecond)
	b.Done(Dropped)
	c.DoneAfter(Ignored, 7*time.Millisecond)
	c.Done(Success) // a second Done is a no-op: not observed again
	want := []string{"g success 30ms after 0s", "g dropped 40ms after 0s", "g ignored 7ms after 0s"}
	if !slices.Equal(ob.done, want) {
		t.Errorf("observed %q, want %q", ob.done, want)
	}
	if len(ob.waits) != 0 {
		t.Errorf("queue waits observed without a queue: %v", ob.waits)
	}
}

func TestObserverSeesQueueWaits(t *testing.T) {
	ob := &recordingObserver{}
	g, err := New(Params{Config: config(t, queueConfig), Observer: ob, Resources: NoResources})
	if err != nil {
		t.Fatal(err)
	}
	holder := mustEnter(t, g, request("/"))
	res := <-enterAsync(func() (Pass, Rejection, bool) { return g.Enter(request("/")) })
	if res.ok || res.rej.Reason != adaptive.RejectQueueTimeout {
		t.Fatalf("queued request: ok=%v reason=%v, want a queue_timeout", res.ok, res.rej.Reason)
	}
	holder.Done(Success)
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if len(ob.waits) != 1 || ob.waits[0] < 20*time.Millisecond {
		t.Errorf("queue waits observed %v, want one of at least max_wait (20ms)", ob.waits)
	}
	if len(ob.done) != 1 {
		t.Errorf("done observed %q, want the holder's alone", ob.done)
	}
}

// TestObserverSeesTheWaitBeforeTheSlot: a request that waited in the queue
// is observed with its upstream latency and, apart, the wait before its slot,
// so that their sum is its time in sluice.
func TestObserverSeesTheWaitBeforeTheSlot(t *testing.T) {
	clk := newFakeClock()
	ob := &recordingObserver{}
	g, err := New(Params{Config: config(t, queuedGroup(1, "1h")), Clock: clk, Observer: ob, Resources: NoResources})
	if err != nil {
		t.Fatal(err)
	}
	holder := mustEnter(t, g, request("/", "X-Tenant", "a"))
	queued := enterQueued(t, g, g.testGroup(t, "g"), 1, request("/", "X-Tenant", "b"))
	clk.Advance(15 * time.Millisecond)
	holder.Done(Success)
	r := <-queued
	if !r.ok {
		t.Fatalf("queued request rejected: %v", r.rej.Reason)
	}
	clk.Advance(5 * time.Millisecond)
	r.p.Done(Success)
	ob.mu.Lock()
	defer ob.mu.Unlock()
	want := []string{"g success 15ms after 0s", "g success 5ms after 15ms"}
	if !slices.Equal(ob.done, want) {
		t.Errorf("observed %q, want %q", ob.done, want)
	}
}

func TestOverridableNamesTheOverrideFields(t *testing.T) {
	got := Overridable()
	for _, p := range []string{"targets.latency", "concurrency.max", "concurrency.limit", "rate.rate", "queue.max_wait"} {
		if !slices.Contains(got, p) {
			t.Errorf("Overridable() lacks %q: %q", p, got)
		}
	}
	for _, p := range []string{"concurrency.law", "key", "match", "rate.algorithm"} {
		if slices.Contains(got, p) {
			t.Errorf("Overridable() holds %q, which needs a reload", p)
		}
	}
	got[0] = "changed"
	if Overridable()[0] == "changed" {
		t.Error("Overridable returns its own slice: a caller can change it")
	}
}

// nopObserver is the cheapest Observer, for the benchmark of the hook's cost.
type nopObserver struct{}

func (nopObserver) ObserveDone(string, Outcome, time.Duration, time.Duration) {}
func (nopObserver) ObserveQueueWait(string, time.Duration)                    {}

func TestObservedEnterDoesNotAllocate(t *testing.T) {
	g, err := New(Params{Config: config(t, benchPlain), Observer: nopObserver{}, Resources: NoResources})
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := g.ClassOf("api", "", adaptive.Default)
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		p, _, ok := g.EnterClass(ctx, cl)
		if !ok {
			t.Fatal("rejected")
		}
		p.Done(Success)
	}); n != 0 {
		t.Errorf("Enter+Done with an observer allocates %v times", n)
	}
}
