//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// ownGroup does nothing here: without process groups (Windows) a child's
// own workers are not reached by Stop.
func ownGroup(*exec.Cmd) {}

// killGroup kills p alone.
func killGroup(p *os.Process) { _ = p.Kill() }
