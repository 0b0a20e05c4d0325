//go:build !(linux || darwin || freebsd)

package proxy

import "net"

// peerOpen cannot look without blocking here; a request that fails on a stale
// connection is retried when that is safe (see forwardH1).
func peerOpen(net.Conn) bool { return true }
