package permit

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// drain tells the Session streams that the server shuts down: each ends
// after the call it is serving, if any, so that grpc's GracefulStop, which
// waits for every stream, does not wait for idle sessions forever.
type drain struct {
	once sync.Once
	stop chan struct{}
}

func newDrain() *drain { return &drain{stop: make(chan struct{})} }

func (d *drain) start() { d.once.Do(func() { close(d.stop) }) }

var errDraining = status.Error(codes.Unavailable, "permit: the server is shutting down")
