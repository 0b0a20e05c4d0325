//go:build !unix

package redistest

import "os"

// The signals of Pause and Resume: none here (Windows cannot stop a
// process and let it go on), so Pause skips the test.
var pauseSignal, resumeSignal os.Signal
