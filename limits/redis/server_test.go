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

// goAway starts an outage of srv as how names it: "killed" (the process
// ends) or "hung" (SIGSTOP; resumed when the test ends, if it has not come
// back before). comeBack ends it: srv restarted empty, or resumed.
func goAway(t testing.TB, srv *server, how string) {
	if how == "killed" {
		srv.Kill()
		return
	}
	srv.Pause()
	t.Cleanup(srv.Resume)
}

// comeBack ends an outage goAway started.
func comeBack(srv *server, how string) {
	if how == "killed" {
		srv.Restart()
	} else {
		srv.Resume()
	}
}

func needBinary(t testing.TB, name string) string { return redistest.Need(t, name) }

func freePort() (int, error) { return redistest.FreePort() }

var bg = context.Background()
