package redis

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/limits"
)

// Batching bounds.
const (
	// maxBatch is the most requests one script call decides. A call holds
	// Redis for a few µs per request, so 64 keep it well under a
	// millisecond.
	maxBatch = 64
	// workers is how many batches may be on the wire at once, each on a
	// connection of its own: two keep Redis busy with one batch while the
	// other's answers are handed out and the next forms (measured: 1, 3 and
	// 4 were slower; BenchmarkDecisions).
	workers = 2
	// maxQueued bounds the requests waiting for a batch; beyond it a
	// decision fails at once (and is answered by the fallback).
	maxQueued = 1 << 14
)

var errQueueFull = errors.New("limits/redis: too many decisions waiting for Redis")

// request is one decision waiting for its batch. A worker sets res or err
// and then signals done (buffered: the worker never waits); a caller whose
// budget ran out sets gone and leaves. Requests are pooled: a caller that
// got its answer puts its request back (newRequest, free); one that left
// does not, as a worker may still answer it.
type request struct {
	key  string
	n    int64
	res  limits.Result
	err  error
	done chan struct{}
	gone atomic.Bool
}

var requests = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

func newRequest(key string, n int64) *request {
	r := requests.Get().(*request)
	r.key, r.n = key, n
	return r
}

// free puts an answered request back in the pool.
func (r *request) free() {
	r.key, r.res, r.err = "", limits.Result{}, nil
	requests.Put(r)
}

// batcher turns the concurrent decisions of one Limiter into batches: one
// script call on many keys, so Redis pays its per-call cost (the script
// invocation, TIME) once per batch rather than once per decision. It does
// not wait to fill a batch: a batch is whatever queued while the previous
// ones were on the wire, so a lone caller pays one round trip, and many
// callers share them.
//
// Its workers (started by newBatcher, ended by close) each take a batch
// from the queue, make the call on a pooled connection, answer the batch's
// requests, and take the next. Used on a single server only: the keys of a
// batch could hash to different slots of a cluster.
type batcher struct {
	l     *Limiter
	mu    sync.Mutex
	queue []*request
	wake  chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
	calls atomic.Uint64 // script calls made (for the benchmarks' figures)
}

func newBatcher(l *Limiter) *batcher {
	b := &batcher{l: l, wake: make(chan struct{}, workers), stop: make(chan struct{})}
	b.wg.Add(workers)
	for range workers {
		go b.work()
	}
	return b
}

// close stops the workers once their calls are answered; requests still
// queued are left to time out.
func (b *batcher) close() {
	close(b.stop)
	b.wg.Wait()
}

// ask queues r and waits for its answer within the budget.
func (b *batcher) ask(r *request, budget *budget) (limits.Result, error) {
	b.mu.Lock()
	if len(b.queue) >= maxQueued {
		b.mu.Unlock()
		return limits.Result{}, errQueueFull
	}
	b.queue = append(b.queue, r)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		res, err := r.res, r.err
		r.free()
		return res, err
	case <-budget.Done():
		r.gone.Store(true)
		return limits.Result{}, context.DeadlineExceeded
	}
}

// take removes up to maxBatch requests from the queue, skipping those
// whose caller has left.
func (b *batcher) take() []*request {
	b.mu.Lock()
	defer b.mu.Unlock()
	var reqs []*request
	i := 0
	for ; i < len(b.queue) && len(reqs) < maxBatch; i++ {
		if r := b.queue[i]; !r.gone.Load() {
			if reqs == nil {
				reqs = make([]*request, 0, min(maxBatch, len(b.queue)-i))
			}
			reqs = append(reqs, r)
		}
	}
	n := copy(b.queue, b.queue[i:])
	clear(b.queue[n:])
	b.queue = b.queue[:n]
	return reqs
}

func (b *batcher) work() {
	defer b.wg.Done()
	for {
		reqs := b.take()
		if reqs == nil {
			select {
			case <-b.stop:
				return
			case <-b.wake:
				continue
			}
		}
		b.calls.Add(1)
		b.answer(reqs)
	}
}

// answer makes the script call deciding reqs and answers them. The call is
// bounded by the connection's I/O timeouts.
func (b *batcher) answer(reqs []*request) {
	l := b.l
	q := l.q.Load()
	ctx := context.Background()
	cmd := q.command(reqs, "evalsha", l.scr.sha)
	err := l.s.client.Process(ctx, cmd)
	if isNoScript(err) {
		// Redis lost its script cache (a restart, a failover, SCRIPT
		// FLUSH): EVAL runs the script and caches it again.
		cmd = q.command(reqs, "eval", l.scr.src)
		err = l.s.client.Process(ctx, cmd)
	}
	var s string
	if err == nil {
		s, err = cmd.Text()
	}
	res := make([]limits.Result, len(reqs))
	for i := 0; err == nil && i < len(res); i++ {
		res[i], s, err = nextReply(s, q.limit)
	}
	if err == nil && s != "" {
		err = errReply // more replies than requests
	}
	for i, r := range reqs {
		r.res, r.err = res[i], err
		r.done <- struct{}{}
	}
}

// command builds the script call deciding reqs under q: verb is "evalsha"
// with the script's SHA-1, or "eval" with its source; extra arguments go
// last.
func (q *quota) command(reqs []*request, verb, script string, extra ...any) *goredis.Cmd {
	args := make([]any, 0, 5+2*len(reqs)+len(extra))
	args = append(args, verb, script, len(reqs))
	for _, r := range reqs {
		args = append(args, r.key)
	}
	args = append(args, q.a1, q.a2)
	for _, r := range reqs {
		args = append(args, r.n)
	}
	args = append(args, extra...)
	return goredis.NewCmd(context.Background(), args...)
}
