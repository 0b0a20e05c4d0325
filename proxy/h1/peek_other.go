//go:build !(linux || darwin || freebsd)

package h1

import "net"

// idleProbe cannot look without blocking here: bytes sent to an idle connection
// are found only if they arrived with its last response (see the proxy's forwardH1), and a
// request that fails on a stale connection is retried when that is safe.
type idleProbe struct{}

func (p *idleProbe) init(net.Conn) {}

func (p *idleProbe) quiet() bool { return true }

// upWriter is what an upstream connection's buffered writer writes to: here,
// plainly the connection (armed changes nothing).
type upWriter struct {
	nc    net.Conn
	armed bool
}

func (w *upWriter) init(nc net.Conn, _ *idleProbe) { w.nc = nc }

func (w *upWriter) Write(p []byte) (int, error) {
	w.armed = false
	return w.nc.Write(p)
}
