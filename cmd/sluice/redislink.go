package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/limits/redis"
)

// redisLog routes go-redis's log lines (dial failures, pool trouble), which
// it writes through one process-wide logger, to hclog at warn. While Redis
// is down every probe and heartbeat fails to dial: a line repeated within
// repeatAfter is dropped, and the next different one says how often the
// previous one repeated.
type redisLog struct {
	log         hclog.Logger
	repeatAfter time.Duration

	mu      sync.Mutex
	last    string
	lastAt  time.Time
	dropped int
}

func (r *redisLog) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	now := time.Now()
	r.mu.Lock()
	if msg == r.last && now.Sub(r.lastAt) < r.repeatAfter {
		r.dropped++
		r.mu.Unlock()
		return
	}
	dropped := r.dropped
	r.last, r.lastAt, r.dropped = msg, now, 0
	r.mu.Unlock()
	if dropped > 0 {
		r.log.Warn(msg, "previous_repeated", dropped)
		return
	}
	r.log.Warn(msg)
}

// watchRedis logs the changes of the link to Redis that the global quotas
// share: when it goes down (decisions fall back) and when it is back. The
// store only reports its state (Status): it is read at each change the
// store signals (Store.Changed), so the line comes at the moment the
// decisions change, and every period as well, until ctx ends.
func watchRedis(ctx context.Context, s *redis.Store, period time.Duration, log hclog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	mode := redis.ModeRedis
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Changed():
		case <-t.C:
		}
		st := s.Status()
		if st.Mode == mode {
			continue
		}
		mode = st.Mode
		if mode == redis.ModeFallback {
			log.Warn("redis unreachable: global quotas are decided by the fallback until it answers again",
				"fallback", st.Fallback, "nodes", st.Nodes, "error", st.LastError)
		} else {
			log.Info("redis reachable again: global quotas are decided by redis", "since", st.Since.Format(time.RFC3339Nano))
		}
	}
}
