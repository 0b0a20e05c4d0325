//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// The signals of Pause and Resume.
var pauseSignal, resumeSignal os.Signal = syscall.SIGSTOP, syscall.SIGCONT
