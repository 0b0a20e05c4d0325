package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process (SIGKILL) when the
// thread that started it ends, which for a Go program is when it exits: the
// runtime ends a thread only with a goroutine locked to it, and none of
// this package's callers locks one.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
