package probe

import _ "unsafe" // for go:linkname

// procPin and procUnpin are the runtime's own way to learn which P a
// goroutine runs on; sync.Pool is built on them. The runtime keeps both as a
// supported link target with this exact signature for the packages that use
// them (see the "hall of shame" comments in runtime/proc.go and
// go.dev/issue/67401). The alternatives measured worse: a random stripe per
// write makes every cache line bounce between CPUs (3x slower in parallel),
// a stripe per goroutine stack collides for the life of the goroutines, and
// sync.Pool costs 18 ns on its own.

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
