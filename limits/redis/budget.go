package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// budget is the time one decision may wait for Redis: a context.Context that
// is done when the duration given to startBudget has passed. Unlike
// context.WithTimeout it is reused: a budget whose timer was stopped before
// it fired goes back to a pool, so a decision answered in time allocates
// nothing for its deadline. One that fired (its channel is closed) is left
// to the garbage collector. Its Deadline is not reported; only Done and Err
// are meant to be used (AutoFuture.WaitContext).
type budget struct {
	timer   *time.Timer
	done    chan struct{}
	expired atomic.Bool
}

var budgets sync.Pool

func startBudget(d time.Duration) *budget {
	if b, ok := budgets.Get().(*budget); ok {
		b.timer.Reset(d)
		return b
	}
	b := &budget{done: make(chan struct{})}
	b.timer = time.AfterFunc(d, b.expire)
	return b
}

func (b *budget) expire() {
	b.expired.Store(true)
	close(b.done)
}

// stop ends the budget's use; b must not be used afterwards.
func (b *budget) stop() {
	if b.timer.Stop() {
		budgets.Put(b)
	}
}

func (b *budget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (b *budget) Done() <-chan struct{}       { return b.done }
func (b *budget) Value(any) any               { return nil }

func (b *budget) Err() error {
	if b.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}
