package hog

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setNice sets the nice level of the calling thread and returns its id: on
// Linux a nice level is a thread's, and PRIO_PROCESS with the thread's id
// sets it alone.
func setNice(n int) (int, error) {
	tid := unix.Gettid()
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil {
		return tid, fmt.Errorf("hog: nice %d: %w", n, err)
	}
	return tid, nil
}
