//go:build !linux

package backend

import "time"

// burnCPU spins for d of wall time (no thread CPU clock on this platform).
func burnCPU(d time.Duration) { burnWall(d) }
