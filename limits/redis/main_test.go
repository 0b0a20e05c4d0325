package redis

import (
	"context"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// quiet drops go-redis's log lines (dial failures are the tests' subject);
// the daemon routes them to its own logger.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	goredis.SetLogger(quiet{})
	os.Exit(m.Run())
}
