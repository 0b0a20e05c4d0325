//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing here: only Linux kills a child with its
// parent (the tests' cleanups still kill it).
func dieWithParent(*exec.Cmd) {}
