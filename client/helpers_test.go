package client

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fakeClock is a hand-moved clock whose Sleep moves it instead of waiting,
// and remembers each wait asked of it.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// seeded returns a deterministic Rand for Config.
func seeded(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// noDrop is a Rand whose draws pass any drop probability below 3/4 (a
// lone refusal's is 1/2) and put the backoff's jitter at three quarters.
func noDrop() float64 { return 0.75 }

// events collects a Client's events.
type events struct {
	mu   sync.Mutex
	list []Event
}

func (e *events) observe(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

func (e *events) count(k EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.list {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func mustNew(t testing.TB, c Config) *Client {
	t.Helper()
	cl, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
