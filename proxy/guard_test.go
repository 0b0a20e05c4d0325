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
