package permit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// TestMoreCallersThanStreams: a gRPC client with more acquires waiting at
// once than the service serves streams on a connection (permitpb.MaxStreams)
// holds at most seven eighths of that bound in acquires, the rest waiting
// for a session, and keeps sessions for releases, so that the release that
// ends their wait goes through: all of them end.
func TestMoreCallersThanStreams(t *testing.T) {
	const (
		callers   = permitpb.MaxStreams + 44
		acquiring = permitpb.MaxStreams - permitpb.MaxStreams/8 // permitclient's bound
	)
	e := newEnv(t, queued(1, 2*callers), permit.Params{})
	s := serve(t, e.svc, "unix")
	c, err := permitclient.New(s.addr, permitclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := c.Acquire(ctx, permitclient.Request{Group: "jobs"})
			if err == nil {
				err = p.Done(permitclient.Success)
			}
			errs <- err
		}()
	}
	// As many acquires as the client lets wait in the group's queue.
	waitFor(t, "the queue to fill", func() bool {
		st, _ := e.gate.Group("jobs")
		return st.Queued == acquiring
	})
	if err := held.Done(permitclient.Success); err != nil {
		t.Fatal(err)
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatal("the callers did not all end within 2 minutes")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
