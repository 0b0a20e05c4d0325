//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup has cmd's child lead a process group of its own.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group that p leads (SIGKILL): p and the
// workers it forked.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
