package load

import (
	"context"
	"time"
)

// Clock is the generator's time source. The real one reads the wall clock
// and sleeps; tests pass a virtual one.
type Clock interface {
	Now() time.Time
	// SleepUntil returns at t (or at once if t has passed), or early with
	// ctx's error.
	SleepUntil(ctx context.Context, t time.Time) error
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
