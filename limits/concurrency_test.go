package limits

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newConc(t *testing.T, p ConcurrencyParams) *Concurrency {
	t.Helper()
	return must(NewConcurrency(p))
}

// waitFor spins (yielding) until cond holds: synchronisation on state, not a
// sleep. It fails the test if cond never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 5_000_000 {
			t.Fatalf("never happened: %s", what)
		}
		runtime.Gosched()
	}
}

func TestConcurrencyTryAcquireRelease(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 2})
	if !c.TryAcquire() || !c.TryAcquire() {
		t.Fatal("could not take 2 slots of 2")
	}
	if c.TryAcquire() {
		t.Fatal("took a third slot")
	}
	if err := c.Acquire(context.Background(), AcquireOptions{}); !errors.Is(err, ErrLimit) {
		t.Fatalf("Acquire without a queue = %v, want ErrLimit", err)
	}
	c.Release()
	if c.InFlight() != 1 || !c.TryAcquire() {
		t.Fatalf("after Release: in flight %d", c.InFlight())
	}
	c.Release()
	c.Release()
	if c.InFlight() != 0 {
		t.Fatalf("in flight %d, want 0", c.InFlight())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Release without Acquire did not panic")
		}
	}()
	c.Release()
}

func TestConcurrencyShrinkRevokesNothingGrantsNothing(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 4})
	for range 4 {
		c.TryAcquire()
	}
	must(0, c.SetLimit(2))
	if c.InFlight() != 4 || c.Limit() != 2 {
		t.Fatalf("in flight %d, limit %d", c.InFlight(), c.Limit())
	}
	for i := range 2 {
		c.Release()
		if c.TryAcquire() {
			t.Fatalf("granted a slot with %d in flight, limit 2", 4-i-1)
		}
	}
	c.Release()
	if !c.TryAcquire() {
		t.Fatal("no slot with 1 in flight, limit 2")
	}
	if err := c.SetLimit(0); err == nil {
		t.Fatal("SetLimit(0) accepted")
	}
}

// acquireAsync starts an Acquire and returns its result channel, after the
// waiter is queued (n waiters in all).
func acquireAsync(t *testing.T, c *Concurrency, ctx context.Context, o AcquireOptions, queued int) chan error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- c.Acquire(ctx, o) }()
	waitFor(t, "waiter queued", func() bool { return c.Queued() == queued })
	return ch
}

func TestConcurrencyOrder(t *testing.T) {
	for _, tc := range []struct {
		order Order
		want  []int
	}{{FIFO, []int{0, 1, 2}}, {LIFO, []int{2, 1, 0}}} {
		t.Run(tc.order.String(), func(t *testing.T) {
			c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 10, Order: tc.order})
			c.TryAcquire()
			chs := make([]chan error, 3)
			for i := range chs {
				chs[i] = acquireAsync(t, c, context.Background(), AcquireOptions{}, i+1)
			}
			for _, want := range tc.want {
				c.Release() // hands the slot to the next waiter
				if err := <-chs[want]; err != nil {
					t.Fatalf("waiter %d: %v", want, err)
				}
				if c.InFlight() != 1 {
					t.Fatalf("in flight %d after a hand-off, want 1", c.InFlight())
				}
			}
			c.Release()
		})
	}
}

func TestConcurrencyOrderSwitchesAtRuntime(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 10})
	c.TryAcquire()
	a := acquireAsync(t, c, context.Background(), AcquireOptions{}, 1)
	b := acquireAsync(t, c, context.Background(), AcquireOptions{}, 2)
	must(0, c.SetOrder(LIFO))
	c.Release()
	if err := <-b; err != nil {
		t.Fatal(err)
	}
	must(0, c.SetOrder(FIFO))
	c.Release()
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if c.SetOrder(Order(7)) == nil {
		t.Fatal("SetOrder(7) accepted")
	}
}

func TestConcurrencyPriorityAndEviction(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 2})
	c.TryAcquire()
	low1 := acquireAsync(t, c, context.Background(), AcquireOptions{Priority: 0}, 1)
	low2 := acquireAsync(t, c, context.Background(), AcquireOptions{Priority: 0}, 2)
	// Full of priority 0: an equal priority is refused.
	if err := c.Acquire(context.Background(), AcquireOptions{Priority: 0}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("equal priority into a full queue: %v, want ErrQueueFull", err)
	}
	// A higher priority evicts the most recent lowest waiter (low2).
	high := make(chan error, 1)
	go func() { high <- c.Acquire(context.Background(), AcquireOptions{Priority: 5}) }()
	if err := <-low2; !errors.Is(err, ErrEvicted) {
		t.Fatalf("evicted waiter got %v, want ErrEvicted", err)
	}
	waitFor(t, "high queued", func() bool { return c.Queued() == 2 })
	c.Release() // the high priority is served first
	if err := <-high; err != nil {
		t.Fatal(err)
	}
	c.Release()
	if err := <-low1; err != nil {
		t.Fatal(err)
	}
	c.Release()
	if c.InFlight() != 0 || c.Queued() != 0 {
		t.Fatalf("in flight %d, queued %d", c.InFlight(), c.Queued())
	}
}

// Positions bounds how far back a caller may wait: one that would stand
// further back is refused at once, and one pushed back further by a later
// arrival (a higher priority; its own priority's under LIFO) is pushed out
// at once, with ErrEvicted, rather than left to time out.
func TestConcurrencyPositions(t *testing.T) {
	t.Run("fifo", func(t *testing.T) {
		c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 10})
		c.TryAcquire()
		two := AcquireOptions{Positions: 2}
		a := acquireAsync(t, c, context.Background(), two, 1)
		b := acquireAsync(t, c, context.Background(), two, 2)
		if err := c.Acquire(context.Background(), two); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("a third waiter with two positions: %v, want ErrQueueFull", err)
		}
		// One that may stand only first (the interval between slots has
		// grown): b, second, is pushed out, and the caller refused.
		if err := c.Acquire(context.Background(), AcquireOptions{Positions: 1}); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("a waiter with one position behind one: %v, want ErrQueueFull", err)
		}
		if err := <-b; !errors.Is(err, ErrEvicted) {
			t.Fatalf("the waiter beyond the new bound: %v, want ErrEvicted", err)
		}
		if c.Queued() != 1 {
			t.Fatalf("%d queued after a push-out and a refusal, want 1", c.Queued())
		}
		b = acquireAsync(t, c, context.Background(), two, 2)
		// A higher priority goes in front: b, now third, is pushed out; a,
		// second, stays.
		high := make(chan error, 1)
		go func() { high <- c.Acquire(context.Background(), AcquireOptions{Priority: 5, Positions: 1}) }()
		if err := <-b; !errors.Is(err, ErrEvicted) {
			t.Fatalf("the waiter pushed to third: %v, want ErrEvicted", err)
		}
		waitFor(t, "high queued", func() bool { return c.Queued() == 2 })
		for _, ch := range []chan error{high, a} {
			c.Release()
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
		c.Release()
	})
	t.Run("lifo", func(t *testing.T) {
		c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 10, Order: LIFO})
		c.TryAcquire()
		two := AcquireOptions{Positions: 2}
		a := acquireAsync(t, c, context.Background(), two, 1)
		b := acquireAsync(t, c, context.Background(), two, 2)
		// The newest is served first: a third is admitted, and a, the oldest,
		// now third, is pushed out.
		third := make(chan error, 1)
		go func() { third <- c.Acquire(context.Background(), two) }()
		if err := <-a; !errors.Is(err, ErrEvicted) {
			t.Fatalf("the oldest, pushed to third: %v, want ErrEvicted", err)
		}
		waitFor(t, "third queued", func() bool { return c.Queued() == 2 })
		for _, ch := range []chan error{third, b} {
			c.Release()
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
		c.Release()
		if c.InFlight() != 0 || c.Queued() != 0 {
			t.Fatalf("in flight %d, queued %d", c.InFlight(), c.Queued())
		}
	})
}

func TestConcurrencyWaitTimeoutAndContext(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 5})
	c.TryAcquire()
	if err := c.Acquire(context.Background(), AcquireOptions{MaxWait: time.Millisecond}); !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("per-call max wait: %v, want ErrWaitTimeout", err)
	}
	must(0, c.SetMaxWait(time.Millisecond))
	if err := c.Acquire(context.Background(), AcquireOptions{}); !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("default max wait: %v, want ErrWaitTimeout", err)
	}
	if err := c.Acquire(context.Background(), AcquireOptions{MaxWait: -1}); !errors.Is(err, ErrLimit) {
		t.Fatalf("negative max wait: %v, want ErrLimit", err)
	}
	must(0, c.SetMaxWait(0))
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquireAsync(t, c, ctx, AcquireOptions{}, 1)
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer dcancel()
	if err := c.Acquire(dctx, AcquireOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v, want context.DeadlineExceeded", err)
	}
	if c.Queued() != 0 || c.InFlight() != 1 {
		t.Fatalf("queued %d, in flight %d after abandoned waits", c.Queued(), c.InFlight())
	}
	c.Release()
	if !c.TryAcquire() {
		t.Fatal("slot lost after abandoned waits")
	}
}

func TestConcurrencyRaisingTheLimitWakesWaiters(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 5})
	c.TryAcquire()
	chs := []chan error{
		acquireAsync(t, c, context.Background(), AcquireOptions{}, 1),
		acquireAsync(t, c, context.Background(), AcquireOptions{}, 2),
		acquireAsync(t, c, context.Background(), AcquireOptions{}, 3),
	}
	must(0, c.SetLimit(3))
	for _, i := range []int{0, 1} {
		if err := <-chs[i]; err != nil {
			t.Fatal(err)
		}
	}
	if c.InFlight() != 3 || c.Queued() != 1 {
		t.Fatalf("in flight %d, queued %d; want 3 and 1", c.InFlight(), c.Queued())
	}
	c.Release()
	if err := <-chs[2]; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c.Release()
	}
}

// A waiter whose context ends exactly as a slot is handed to it passes the
// slot on: to the next waiter, or back. Run many times to hit both orders.
func TestConcurrencyCancelRacesHandOff(t *testing.T) {
	baseline := runtime.NumGoroutine()
	defer func() { // every waiter goroutine has returned: none leaked
		waitFor(t, "waiter goroutines to exit", func() bool { return runtime.NumGoroutine() <= baseline })
	}()
	for i := range 2000 {
		c := newConc(t, ConcurrencyParams{Limit: 1, MaxQueue: 5})
		c.TryAcquire()
		ctx, cancel := context.WithCancel(context.Background())
		first := acquireAsync(t, c, ctx, AcquireOptions{}, 1)
		var second chan error
		if i%2 == 0 {
			second = acquireAsync(t, c, context.Background(), AcquireOptions{}, 2)
		}
		go cancel()
		c.Release()
		if err := <-first; err == nil {
			c.Release() // it got the slot before its context ended
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("first waiter: %v", err)
		}
		if second != nil {
			if err := <-second; err != nil {
				t.Fatalf("iteration %d: second waiter: %v (slot lost?)", i, err)
			}
			c.Release()
		}
		if c.InFlight() != 0 || c.Queued() != 0 {
			t.Fatalf("iteration %d: in flight %d, queued %d: a slot leaked", i, c.InFlight(), c.Queued())
		}
	}
}

// ledger is the test's own count of slots held (granted and not yet
// released, as the holders see them) and the ceiling they must stay under,
// packed in one word so that a holder reads both at the same instant:
// held in the low 32 bits, ceiling in the high 32.
type ledger struct{ word atomic.Int64 }

// take records a grant; it reports held and the ceiling right after it.
func (l *ledger) take() (held, ceiling int64) {
	w := l.word.Add(1)
	return w & (1<<32 - 1), w >> 32
}

func (l *ledger) give() { l.word.Add(-1) }

func (l *ledger) setCeiling(n int64) {
	for {
		w := l.word.Load()
		if l.word.CompareAndSwap(w, n<<32|w&(1<<32-1)) {
			return
		}
	}
}

// In flight never exceeds the limit, also while the limit shrinks and grows
// under concurrent load. Two checks, each able to fail on its own:
//
// The ledger: each holder counts its slot between grant and release, so
// held <= in flight at every instant, even if the limiter miscounts. The
// ceiling is the limit, except that after a shrink it stays high until in
// flight has drained under the new limit (the slots held then are not
// revoked); from then until the limit rises, held must stay under it. held
// and the ceiling are read in one atomic step: read apart, a count taken
// before the drain gets compared with the ceiling set after it.
//
// The shrink: lowered is odd from SetLimit(low) returning to just before
// SetLimit(high). A caller that reads the same odd value before it asks
// and after its grant was served while the limit stayed low, so its slot
// came only with in flight below the limit (a hand-off keeps the count), and
// in flight cannot have climbed above the limit since: it must read <= low,
// also while older slots are still draining.
func TestConcurrencyNeverOvershootsWhileLimitChanges(t *testing.T) {
	const high, low = 8, 2
	c := newConc(t, ConcurrencyParams{Limit: high, MaxQueue: 64})
	var book ledger
	book.setCeiling(high)
	var lowered atomic.Int64
	var aboveCeiling, aboveLowered, example atomic.Int64 // example: held<<32 | ceiling
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				asked := lowered.Load()
				if g%2 == 0 {
					if !c.TryAcquire() {
						runtime.Gosched()
						continue
					}
				} else if c.Acquire(context.Background(), AcquireOptions{Priority: g % 3, MaxWait: time.Millisecond}) != nil {
					continue
				}
				if held, ceiling := book.take(); held > ceiling {
					aboveCeiling.Add(1)
					example.Store(held<<32 | ceiling)
				}
				if n := c.InFlight(); asked%2 == 1 && n > low && lowered.Load() == asked {
					aboveLowered.Add(1)
				}
				runtime.Gosched()
				book.give()
				c.Release()
			}
		}()
	}
	for range 200 {
		must(0, c.SetLimit(low))
		lowered.Add(1)
		waitFor(t, "drain under the lowered limit", func() bool { return c.InFlight() <= low })
		book.setCeiling(low)
		for range 20 {
			runtime.Gosched()
		}
		book.setCeiling(high)
		lowered.Add(1)
		must(0, c.SetLimit(high))
	}
	close(stop)
	wg.Wait()
	if v := aboveCeiling.Load(); v > 0 {
		e := example.Load()
		t.Errorf("%d grants above the limit (e.g. %d held under a ceiling of %d)", v, e>>32, e&(1<<32-1))
	}
	if v := aboveLowered.Load(); v > 0 {
		t.Errorf("%d grants asked for under the lowered limit %d left more than %d in flight", v, low, low)
	}
	if c.InFlight() != 0 || c.Queued() != 0 {
		t.Errorf("in flight %d, queued %d at the end", c.InFlight(), c.Queued())
	}
}

func TestConcurrencyValidate(t *testing.T) {
	err := ConcurrencyParams{Limit: 0, MaxQueue: -1, MaxWait: -1, Order: 3}.Validate()
	want := "limits: concurrency limit must be between 1 and 2147483647, got 0\n" +
		"limits: concurrency max queue must be between 0 and 2147483647, got -1\n" +
		"limits: concurrency max wait must not be negative, got -1ns\n" +
		"limits: concurrency order must be fifo or lifo, got Order(3)"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v\nwant %v", err, want)
	}
	c := newConc(t, ConcurrencyParams{Limit: 1})
	if c.SetMaxQueue(-1) == nil || c.SetMaxWait(-1) == nil {
		t.Fatal("negative setters accepted")
	}
	must(0, c.SetMaxQueue(3))
	if c.MaxQueue() != 3 || c.MaxWait() != 0 || c.Order() != FIFO {
		t.Fatalf("read-outs: %d %v %v", c.MaxQueue(), c.MaxWait(), c.Order())
	}
}

func TestConcurrencyUncontendedDoesNotAllocate(t *testing.T) {
	c := newConc(t, ConcurrencyParams{Limit: 4, MaxQueue: 4})
	if a := testing.AllocsPerRun(1000, func() {
		if c.Acquire(context.Background(), AcquireOptions{}) == nil {
			c.Release()
		}
		if c.TryAcquire() {
			c.Release()
		}
	}); a != 0 {
		t.Fatalf("%v allocations per Acquire/Release", a)
	}
}
