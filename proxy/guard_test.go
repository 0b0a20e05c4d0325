package proxy

import (
	"net"
	"testing"
	"time"
)

// deadlineLog is a connection that records the deadlines set on it.
type deadlineLog struct {
	net.Conn
	read, write []time.Time
}

func (c *deadlineLog) SetReadDeadline(t time.Time) error  { c.read = append(c.read, t); return nil }
func (c *deadlineLog) SetWriteDeadline(t time.Time) error { c.write = append(c.write, t); return nil }
func (c *deadlineLog) SetDeadline(t time.Time) error {
	c.read, c.write = append(c.read, t), append(c.write, t)
	return nil
}

// TestGuardSkipsIdleClears checks that a guarded connection passes every
// deadline on but a clear of one that is not set, in the order net/http's
// server sets them for a request and its response.
func TestGuardSkipsIdleClears(t *testing.T) {
	c := &deadlineLog{}
	g := &guardConn{Conn: c}
	head, idle := time.Unix(100, 0), time.Unix(200, 0)
	past := time.Unix(1, 0)
	var zero time.Time

	g.SetReadDeadline(head) // the head's deadline
	g.SetReadDeadline(zero) // the head is read
	g.SetReadDeadline(zero) // the background read starts: skipped
	g.SetReadDeadline(past) // it is aborted
	g.SetReadDeadline(zero)
	g.SetWriteDeadline(zero) // after the response: none was set, skipped
	g.SetReadDeadline(idle)  // keep-alive
	want := []time.Time{head, zero, past, zero, idle}
	if !equalTimes(c.read, want) || len(c.write) != 0 {
		t.Fatalf("read deadlines %v, write %v; want %v and none", c.read, c.write, want)
	}

	// SetDeadline sets both: each clear after it passes, once.
	c.read, c.write = nil, nil
	g.SetDeadline(head)
	g.SetWriteDeadline(zero)
	g.SetWriteDeadline(zero)
	g.SetReadDeadline(zero)
	g.SetDeadline(zero)
	if !equalTimes(c.read, []time.Time{head, zero}) || !equalTimes(c.write, []time.Time{head, zero}) {
		t.Fatalf("after SetDeadline: read %v, write %v", c.read, c.write)
	}
	g.SetWriteDeadline(head)
	g.SetDeadline(zero) // the write deadline is set: the clear passes
	if !equalTimes(c.write, []time.Time{head, zero, head, zero}) {
		t.Fatalf("write deadlines %v", c.write)
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// TestGuardInventsNoEndAfterAnsweredHead sends a valid request and, in the
// same write, a head net/http's server answers itself (501: a transfer
// coding it cannot frame; 505: HTTP/2.0 in a request line). The server then
// reads only its background byte, during the first request: that read must
// end as the connection does (here a deadline, as the server aborts it; or
// the client's close), never with an end of stream the guard made up, which
// the server takes for a client that went and cancels the first request.
func TestGuardInventsNoEndAfterAnsweredHead(t *testing.T) {
	for name, second := range map[string]string{
		"te-unknown": "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"http-2.0":   "GET /x HTTP/2.0\r\nHost: x\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			g := &guardConn{Conn: server, limit: defaultMaxHeaderBytes}
			first := "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
			go func() { _, _ = client.Write([]byte(first + second)) }()
			buf := make([]byte, 4096)
			got := 0
			for got < len(first) {
				n, err := g.Read(buf[got:])
				if err != nil {
					t.Fatalf("after %d bytes: %v", got, err)
				}
				got += n
			}
			// The background read, aborted by a deadline as net/http aborts it.
			_ = g.SetReadDeadline(time.Unix(1, 0))
			_, err := g.Read(buf[:1])
			if !isTimeout(err) {
				t.Fatalf("the background read ended with %v, want the deadline's timeout", err)
			}
			// The client goes: now the read ends with the connection's end.
			_ = g.SetReadDeadline(time.Time{})
			client.Close()
			if _, err := g.Read(buf[:1]); err == nil || isTimeout(err) {
				t.Fatalf("after the client closed: %v, want the connection's end", err)
			}
		})
	}
}
