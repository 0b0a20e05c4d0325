package proxy

import (
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/proxy/h1"

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
	if r.ProtoMajor != 1 || len(up) == 0 || !h1.HasToken(r.Header["Connection"], "upgrade") {
		return ""
	}
	var b strings.Builder
	for _, v := range up {
		for s := v; ; {
			tok, rest, ok := h1.NextToken(s)
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
func upgradeAccepted(h *h1.ResponseHead, offer string) bool {
	return offer != "" && h.Upgrade && strings.EqualFold(h.UpgradeTo, offer)
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
// 101: the exchange becomes the stream st reserved (see streams.go; its
// latency the time to the 101: an upgrade beyond its group's streams bound
// was refused before the upstream saw it); then splice takes the client's
// connection over, sends it the 101 head and leaves the bytes to two pumps,
// one per direction, which run until either side ends and close both (see
// splicedConn). st is splice's to end. The handler returns at once: an idle
// spliced connection holds two small goroutines and no buffer.
func (p *Proxy) splice(w http.ResponseWriter, r *http.Request, c *h1.Conn, upgradeTo string, x *exchange, watch clientStop, st gate.Stream) (abort bool) {
	if !watch.stop() {
		// The client went away while the upstream was answering.
		st.End()
		c.Abort()
		x.finish(gate.Ignored)
		return false
	}
	x.openReserved(time.Now())
	var ahead []byte // what the client sent after its request, read already
	if hw, ok := w.(*h1Writer); ok && hw.c.r < hw.c.w {
		ahead = append(ahead, (*hw.c.rbuf)[hw.c.r:hw.c.w]...)
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		st.End()
		c.Abort()
		p.fail(r.Context(), w, x, grpcNone, "", h1.ProtoErr("cannot take over the client connection: %v", err), false)
		return false
	}
	if _, own := w.(*h1Writer); !own {
		if n := brw.Reader.Buffered(); n > 0 { // net/http's server read ahead
			b, _ := brw.Reader.Peek(n)
			ahead = append(ahead, b...)
		}
	}
	p.stats.upgrades.Add(1)
	out := conn // where the upstream's bytes go
	if g, ok := conn.(*guardConn); ok {
		// The bytes that follow are the new protocol's, not requests; they
		// are written to the connection itself.
		g.release()
		out = g.Conn
	}
	_ = conn.SetDeadline(time.Time{})
	_ = c.Net.SetDeadline(time.Time{})

	bw := brw.Writer
	bw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = w.Header().Write(bw)
	bw.WriteString("Connection: Upgrade\r\n")
	bw.WriteString("Upgrade: ")
	bw.WriteString(upgradeTo) // the offer: printable ASCII (upgradeAccepted)
	bw.WriteString("\r\n")
	bw.WriteString("\r\n")
	if n := c.R.Buffered(); n > 0 { // what the upstream sent right after its head
		b, _ := c.R.Peek(n)
		_, _ = bw.Write(b)
		_, _ = c.R.Discard(n)
	}
	err = bw.Flush()
	if err == nil && len(ahead) > 0 {
		_, err = c.Net.Write(ahead)
	}
	if err != nil {
		st.End()
		_ = conn.Close()
		c.Abort()
		return false
	}
	ws := strings.EqualFold(upgradeTo, "websocket")
	sc := &splicedConn{client: conn, up: c.Net,
		toUp: newPumpSide(conn, c.Net, ws), toCl: newPumpSide(c.Net, out, ws)}
	ls := p.streams.add(st, sc.cut)
	go func() {
		sc.serve()
		p.streams.remove(ls)
	}()
	return false
}
