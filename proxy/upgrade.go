package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/gate"
)

// upgradeOffer returns the protocols r asks to switch to, as the proxy forwards
// them: "" when r asks for no upgrade (it must be HTTP/1 with Connection naming
// "upgrade" and an Upgrade field). h2c is never offered: an upstream that took
// it would speak HTTP/2 on a spliced connection, every later request passing
// unseen by the gate (the proxy speaks h2c to the upstream itself, when asked
// with prior knowledge).
func upgradeOffer(r *http.Request) string {
	up := r.Header["Upgrade"]
	if r.ProtoMajor != 1 || len(up) == 0 || !hasToken(r.Header["Connection"], "upgrade") {
		return ""
	}
	var b strings.Builder
	for _, v := range up {
		for s := v; ; {
			tok, rest, ok := nextToken(s)
			if !ok {
				break
			}
			s = rest
			if strings.EqualFold(tok, "h2c") || !printableASCII(tok) {
				continue
			}
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tok)
		}
	}
	return b.String()
}

// upgradeAccepted reports whether a 101 head switches to what was offered, as
// httputil.ReverseProxy checks it: Connection names "upgrade" and Upgrade is the
// offer, ASCII case aside. Anything else (no Upgrade, another protocol) would
// splice a tunnel the client never asked for.
func upgradeAccepted(h *respHead, offer string) bool {
	return offer != "" && h.upgrade && strings.EqualFold(h.upgradeTo, offer)
}

// printableASCII reports whether s is non-empty and all printable ASCII.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return s != ""
}

// splice completes an upgrade (WebSocket and the like) the upstream accepted with
// 101: it takes the client's connection over, sends it the 101 head, then copies
// bytes both ways until either side ends, and closes both. The exchange finishes
// at the 101 with a success, its latency the time to the upgrade: a long-lived
// connection holds no admission slot.
func (p *Proxy) splice(w http.ResponseWriter, r *http.Request, c *upConn, upgradeTo string, x *exchange, watch clientStop) (abort bool) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		watch.stop()
		c.abort()
		p.fail(r.Context(), w, x, grpcNone, "", protoErr("cannot take over the client connection: %v", err), false)
		return false
	}
	if !watch.stop() {
		// The client went away while the upstream was answering.
		_ = conn.Close()
		c.abort()
		x.finish(gate.Ignored)
		return false
	}
	x.finish(gate.Success)
	p.stats.upgrades.Add(1)
	out := conn // where the upstream's bytes go
	if g, ok := conn.(*guardConn); ok {
		// The bytes that follow are the new protocol's, not requests; they
		// are written to the connection itself, which lets the kernel splice.
		g.release()
		out = g.Conn
	}
	_ = conn.SetDeadline(time.Time{})
	_ = c.nc.SetDeadline(time.Time{})

	bw := brw.Writer
	bw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = w.Header().Write(bw)
	bw.WriteString("Connection: Upgrade\r\n")
	bw.WriteString("Upgrade: ")
	bw.WriteString(upgradeTo) // the offer: printable ASCII (upgradeAccepted)
	bw.WriteString("\r\n")
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
	pump(out, c.nc)
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
