package probe

import "github.com/sluicehq/sluice/internal/hist"

// The latency histogram's layout, the value each bucket reports and the
// quantile rule live in internal/hist, shared with adaptive/sim's model of
// this probe; a Recorder's stripes and window are arrays of hist.Counts.

// MaxTracked is the longest duration, in nanoseconds, that the histogram
// resolves within 1/128; longer ones are counted as MaxTracked.
const MaxTracked = hist.MaxTracked
