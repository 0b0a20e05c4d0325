package client

import (
	"context"
	"time"
)

// Clock is a Client's time source: the wall clock by default, a hand-moved
// one in tests (so that no test sleeps through a backoff). Its methods are
// called from many goroutines at once.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or returns ctx's error as soon as ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

// wallClock is the real time, read from the monotonic clock alone (half
// the cost of time.Now, and steps of the wall clock do not move a window).
type wallClock struct{}

// epoch is the wall time the monotonic readings are added to.
var epoch = time.Now()

func (wallClock) Now() time.Time { return epoch.Add(time.Since(epoch)) }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
