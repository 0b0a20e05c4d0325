package proxy

import (
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/gate"
)

// splice completes an upgrade (WebSocket and the like) the upstream accepted with
// 101: it takes the client's connection over, sends it the 101 head, then copies
// bytes both ways until either side ends, and closes both. The exchange finishes
// at the 101 with a success, its latency the time to the upgrade: a long-lived
// connection holds no admission slot.
func (p *Proxy) splice(w http.ResponseWriter, r *http.Request, c *upConn, h *respHead, x *exchange, stop func() bool) (abort bool) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		stop()
		c.abort()
		p.fail(r.Context(), w, x, grpcNone, "", protoErr("cannot take over the client connection: %v", err), false)
		return false
	}
	if !stop() {
		// The client went away while the upstream was answering.
		_ = conn.Close()
		c.abort()
		x.finish(gate.Ignored)
		return false
	}
	x.finish(gate.Success)
	p.stats.upgrades.Add(1)
	_ = conn.SetDeadline(time.Time{})
	_ = c.nc.SetDeadline(time.Time{})

	bw := brw.Writer
	bw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = w.Header().Write(bw)
	bw.WriteString("Connection: Upgrade\r\n")
	if h.upgradeTo != "" && validFieldValue(h.upgradeTo) {
		bw.WriteString("Upgrade: ")
		bw.WriteString(h.upgradeTo)
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
	if n := c.br.Buffered(); n > 0 { // what the upstream sent right after its head
		b, _ := c.br.Peek(n)
		_, _ = bw.Write(b)
		_, _ = c.br.Discard(n)
	}
	if err := bw.Flush(); err != nil {
		_ = conn.Close()
		c.abort()
		return false
	}
	done := make(chan struct{})
	go func() {
		pump(c.nc, brw.Reader) // brw.Reader first yields what the client sent ahead
		_ = conn.Close()
		c.abort()
		close(done)
	}()
	pump(conn, c.nc)
	_ = conn.Close()
	c.abort()
	<-done
	return false
}

// pump copies src to dst until either fails or src ends. io.Copy lets the kernel
// splice socket to socket where it can.
func pump(dst net.Conn, src io.Reader) {
	_, _ = io.Copy(dst, src)
}
