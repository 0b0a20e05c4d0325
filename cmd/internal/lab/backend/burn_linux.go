package backend

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// burnCPU spins until the calling thread has used d of CPU time (its
// CLOCK_THREAD_CPUTIME_ID clock), so the work done is the same whether the
// core is shared or not; only the wall time it takes changes.
func burnCPU(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	if !ok {
		burnWall(d)
		return
	}
	x := uint64(1)
	for {
		for i := 0; i < 2000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		now, _ := threadCPU()
		if now-start >= d {
			break
		}
	}
	sink.Store(x)
}

func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
