// Package hog is the lab's CPU hog: busy loops at a chosen nice level, the
// neighbour that keeps a shared machine's CPU busy whatever the service
// beside it does. sluice-lab runs it as a child process ("sluice-lab hog"),
// so its CPU is its own.
package hog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// MaxThreads bounds Params.Threads.
const MaxThreads = 1024

// Params configures a hog.
type Params struct {
	// Threads is the number of busy loops, each on an OS thread of its own;
	// at least 1.
	Threads int
	// Nice is their nice level, from 0 (the default priority, the same as
	// the service's) to 19 (the lowest): raising it needs no privilege.
	Nice int
}

// Validate reports every problem with p.
func (p Params) Validate() error {
	var errs []error
	if p.Threads < 1 || p.Threads > MaxThreads {
		errs = append(errs, fmt.Errorf("hog: threads must be in [1,%d], got %d", MaxThreads, p.Threads))
	}
	if p.Nice < 0 || p.Nice > 19 {
		errs = append(errs, fmt.Errorf("hog: nice must be in [0,19], got %d", p.Nice))
	}
	return errors.Join(errs...)
}

// String describes p: "2 busy loops at nice 5".
func (p Params) String() string {
	return fmt.Sprintf("%d busy loops at nice %d", p.Threads, p.Nice)
}

// Hog is a running hog.
type Hog struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	rounds atomic.Uint64 // rounds of work done, all loops together
	tids   []int         // the loops' thread ids, set before Start returns
}

// Start starts p.Threads loops, each locked to an OS thread of its own at
// nice p.Nice, and returns once every one runs at that level, or with the
// error of a thread whose level could not be set (then none runs).
func Start(p Params) (*Hog, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hog{cancel: cancel, tids: make([]int, p.Threads)}
	var ready sync.WaitGroup
	errs := make([]error, p.Threads)
	for i := range p.Threads {
		ready.Add(1)
		h.wg.Go(func() {
			// The thread exits with the goroutine, its nice level with it.
			runtime.LockOSThread()
			h.tids[i], errs[i] = setNice(p.Nice)
			ready.Done()
			if errs[i] != nil {
				return
			}
			h.spin(ctx, uint64(i+1))
		})
	}
	ready.Wait()
	if err := errors.Join(errs...); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// spin works until ctx ends, a round at least.
func (h *Hog) spin(ctx context.Context, x uint64) {
	for {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		h.rounds.Add(1)
		if ctx.Err() != nil {
			break
		}
	}
	sink.Store(x)
}

// Stop stops the loops and waits for them; it returns the rounds of work
// they did.
func (h *Hog) Stop() uint64 {
	h.cancel()
	h.wg.Wait()
	return h.rounds.Load()
}

// sink keeps the loops' work from being optimised away.
var sink atomic.Uint64
