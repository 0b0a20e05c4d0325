package cli

import (
	"io"
	"os"
)

// IsTerminal reports whether w, a command's stdout or stderr, is a
// character device, as a terminal is: a command may then redraw a progress
// line in place instead of appending lines. A writer that is not an
// *os.File (a buffer in a test, a pipe wrapper) is not a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
