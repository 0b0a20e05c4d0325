package backend

import (
	"sync/atomic"
	"time"
)

// sink keeps the burn loops' results alive so the compiler cannot drop them.
var sink atomic.Uint64

// burnWall spins for d of wall time: the fallback where a thread CPU clock
// is not available.
func burnWall(d time.Duration) {
	x := uint64(1)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 2000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Store(x)
}
