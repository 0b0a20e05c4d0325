package redis

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// The tests run a real redis-server (internal/redistest): skipped with the
// reason where it is not installed, failed in CI.

type server = redistest.Server

func startServer(t testing.TB, extra ...string) *server { return redistest.Start(t, extra...) }

func newServer(t testing.TB, extra ...string) *server { return redistest.New(t, extra...) }

func needBinary(t testing.TB, name string) string { return redistest.Need(t, name) }

func freePort() (int, error) { return redistest.FreePort() }

var bg = context.Background()
