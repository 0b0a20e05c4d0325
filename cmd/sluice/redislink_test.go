package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestRedisLog: go-redis's lines reach hclog at warn, under "redis", without
// its own prefix; a line repeated within repeatAfter is dropped and counted
// on the next different one.
func TestRedisLog(t *testing.T) {
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "sluice", Output: &out, Level: hclog.Info, DisableTime: true})
	r := &redisLog{log: log.Named("redis"), repeatAfter: time.Hour}
	ctx := context.Background()
	for range 3 {
		r.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 1, "connection refused")
	}
	r.Printf(ctx, "redis: discarding bad PubSub connection: %v", "EOF")
	want := "[WARN]  sluice.redis: connection pool: failed to dial after 1 attempts: connection refused\n" +
		"[WARN]  sluice.redis: discarding bad PubSub connection: EOF: previous_repeated=2\n"
	if got := out.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	// After repeatAfter, the same line is logged again.
	out.Reset()
	r.repeatAfter = 0
	r.Printf(ctx, "redis: discarding bad PubSub connection: %v", "EOF")
	if !strings.Contains(out.String(), "discarding bad PubSub connection: EOF\n") {
		t.Errorf("a repeat after repeatAfter was dropped: %q", out.String())
	}
}
