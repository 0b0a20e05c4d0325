package redis

import (
	"strconv"

	"github.com/sluicehq/sluice/limits"
)

// Mode is where a store's decisions are made.
type Mode int32

// Modes.
const (
	// ModeRedis: decisions go to Redis (a decision that fails is still
	// answered by the fallback).
	ModeRedis Mode = iota
	// ModeFallback: Redis failed repeatedly; decisions are made by the
	// fallback, and one decision probes Redis after each backoff.
	ModeFallback
)

func (m Mode) String() string {
	switch m {
	case ModeRedis:
		return "redis"
	case ModeFallback:
		return "fallback"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Status is a snapshot of a limiter (or a store) for metrics and the admin
// API: where decisions are made, the fallback policy and the sync mode, and
// the figures (limits.StoreStatus). Times are on the clock of the decisions'
// now.
type Status struct {
	// Mode is where decisions are made, since Since (the store's creation,
	// or the last change).
	Mode Mode
	// Fallback is the policy for decisions Redis does not make.
	Fallback limits.Fallback
	// Sync is the limiter's mode ("" in a Store's status).
	Sync limits.Sync
	limits.StoreStatus
}
