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

// epoch is the wall time the monotonic readings are added to, and
// epochNS the same in Unix nanoseconds.
var (
	epoch   = time.Now()
	epochNS = epoch.UnixNano()
)

func (wallClock) Now() time.Time { return epoch.Add(time.Since(epoch)) }

// nanos is the Client's clock read as Unix nanoseconds, what its windows
// count in: with the wall clock, one reading of the monotonic clock and no
// time.Time built (a request the backend accepts needs no more).
func (c *Client) nanos() int64 {
	if c.wall {
		return epochNS + int64(time.Since(epoch))
	}
	return c.cfg.Clock.Now().UnixNano()
}

// timeAt is the instant ns (a nanos reading) as a time.Time: with the wall
// clock, with its monotonic reading, so that a deadline is compared on it.
func (c *Client) timeAt(ns int64) time.Time {
	if c.wall {
		return epoch.Add(time.Duration(ns - epochNS))
	}
	return time.Unix(0, ns)
}

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
