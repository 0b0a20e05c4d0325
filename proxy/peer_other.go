//go:build !(linux || darwin || freebsd)

package proxy

import "net"

// idleProbe cannot look without blocking here: bytes sent to an idle connection
// are found only if they arrived with its last response (see forwardH1), and a
// request that fails on a stale connection is retried when that is safe.
type idleProbe struct{}

func (p *idleProbe) init(net.Conn) {}

func (p *idleProbe) quiet() bool { return true }
