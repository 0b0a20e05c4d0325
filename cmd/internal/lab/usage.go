package lab

import "github.com/sluicehq/sluice/cmd/internal/lab/proc"

// groupUsage measures a child's process group; false for pid 0 (our own
// process) or when it cannot be read.
func groupUsage(pid int) (proc.Usage, bool) {
	if pid == 0 {
		return proc.Usage{}, false
	}
	u, err := proc.GroupUsage(pid)
	return u, err == nil
}
