package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

const streamsGroup = `
[[group]]
name = "s"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.queue]
  max = 0
  [group.streams]
  max = 3
`

// A stream gives its concurrency slot back at its first byte, with that
// time as its latency, and holds one of the group's stream slots until it
// ends; beyond streams.max it is refused, reason "streams", its slot back
// and no latency recorded; ordinary requests go on being admitted while the
// streams stay open.
func TestStreamHoldsAStreamSlot(t *testing.T) {
	g, clk := newGate(t, streamsGroup)
	var open []Stream
	for i := range 3 {
		p := mustEnter(t, g, request("/ws"))
		st, rej, ok := p.Stream(Success, 10*time.Millisecond)
		if !ok {
			t.Fatalf("stream %d refused: %v", i, rej.Reason)
		}
		if st.Group() != "s" {
			t.Fatalf("stream %d in group %q", i, st.Group())
		}
		p.Done(Dropped) // a no-op after Stream
		open = append(open, st)
	}
	s, _ := g.Group("s")
	if s.InFlight != 0 || s.Streams.Open != 3 || s.Streams.Max != 3 || s.Streams.Opened != 3 {
		t.Fatalf("in flight %d, streams %+v; want 0 in flight, 3 of 3 open", s.InFlight, s.Streams)
	}
	// The fourth is refused when it would open; its slot is free again.
	p := mustEnter(t, g, request("/ws"))
	if _, rej, ok := p.Stream(Success, time.Second); ok || rej.Reason != adaptive.RejectStreams || rej.Status() != 503 {
		t.Fatalf("fourth stream: ok %v, reason %v, status %d; want refused, streams, 503", ok, rej.Reason, rej.Status())
	}
	// Ordinary requests: both slots are free.
	a, b := mustEnter(t, g, request("/a")), mustEnter(t, g, request("/b"))
	clk.Advance(5 * time.Millisecond)
	a.Done(Success)
	b.Done(Success)
	s, _ = g.Group("s")
	if s.Rejected[adaptive.RejectStreams] != 1 || s.InFlight != 0 {
		t.Fatalf("rejected %v, in flight %d; want one streams refusal, 0 in flight", s.Rejected, s.InFlight)
	}
	g.Tick(clk.Advance(250 * time.Millisecond))
	s, _ = g.Group("s")
	if lat := s.Latency; lat.Successes != 5 || lat.Max > 11*time.Millisecond {
		t.Fatalf("latency %d successes, max %v; want 5 (3 streams at their first byte, 2 requests), none of the refused one's 1s", lat.Successes, lat.Max)
	}
	if s.Sample.Rejected != 0 {
		t.Fatalf("the law saw %d rejections; a streams refusal is not the upstream's load", s.Sample.Rejected)
	}
	if got := s.Sample.ByPriority[adaptive.Default].Arrived; got != 6 {
		t.Fatalf("derived arrivals %d, want 6 (the refused stream once)", got)
	}
	// An ended stream frees its slot for the next.
	open[0].End()
	open[0].End() // a no-op
	p = mustEnter(t, g, request("/ws"))
	if _, rej, ok := p.Stream(Success, time.Millisecond); !ok {
		t.Fatalf("stream after one ended: refused %v", rej.Reason)
	}
	s, _ = g.Group("s")
	if s.Streams.Open != 3 || s.Streams.Opened != 4 {
		t.Fatalf("streams %+v; want 3 open, 4 opened", s.Streams)
	}
}

// In shadow mode a stream beyond the bound is a would-be refusal, opened.
func TestStreamShadow(t *testing.T) {
	g, _ := newGate(t, strings.Replace(streamsGroup, `name = "s"`, "name = \"s\"\nmode = \"shadow\"", 1))
	for range 4 {
		p := mustEnter(t, g, request("/ws"))
		if _, rej, ok := p.Stream(Success, time.Millisecond); !ok {
			t.Fatalf("refused in shadow: %v", rej.Reason)
		}
	}
	s, _ := g.Group("s")
	if s.Streams.Open != 4 || s.Shadow.Rejected[adaptive.RejectStreams] != 1 || s.Rejected[adaptive.RejectStreams] != 0 {
		t.Fatalf("streams %+v, shadow %v, rejected %v; want 4 open, one would-be refusal", s.Streams, s.Shadow.Rejected, s.Rejected)
	}
}

// The zero Pass streams nothing.
func TestStreamZeroPass(t *testing.T) {
	var p Pass
	st, _, ok := p.Stream(Success, time.Second)
	if !ok || st.Group() != "" {
		t.Fatalf("zero pass: ok %v, group %q", ok, st.Group())
	}
	st.End()
}

// A reserved stream slot is taken before the request is forwarded: beyond
// streams.max the request is refused at once (its concurrency slot back, no
// latency); a reservation holds a stream slot while its request keeps its
// concurrency slot, StreamOpened then makes it the stream (never refused,
// its latency the time to the first byte), and End gives back one whose
// request did not become a stream.
func TestReserveStream(t *testing.T) {
	g, clk := newGate(t, streamsGroup)
	var held []Stream
	for i := range 2 {
		p := mustEnter(t, g, request("/ws"))
		st, rej, ok := p.ReserveStream()
		if !ok {
			t.Fatalf("reservation %d refused: %v", i, rej.Reason)
		}
		if s, _ := g.Group("s"); s.InFlight != 1 || s.Streams.Open != i+1 || s.Streams.Opened != uint64(i) {
			t.Fatalf("reservation %d: in flight %d, streams %+v; want it in flight, %d open, %d opened", i, s.InFlight, s.Streams, i+1, i)
		}
		p.StreamOpened(Success, 10*time.Millisecond)
		held = append(held, st)
	}
	// The third reserves the last slot, and its upstream does not switch.
	p := mustEnter(t, g, request("/ws"))
	third, _, ok := p.ReserveStream()
	if !ok {
		t.Fatal("third reservation refused")
	}
	q := mustEnter(t, g, request("/ws"))
	if _, rej, ok := q.ReserveStream(); ok || rej.Reason != adaptive.RejectStreams {
		t.Fatalf("a reservation beyond the maximum: ok %v, reason %v; want refused, streams", ok, rej.Reason)
	}
	third.End()
	clk.Advance(time.Millisecond)
	p.Done(Ignored)
	s, _ := g.Group("s")
	if s.InFlight != 0 || s.Streams.Open != 2 || s.Streams.Opened != 2 || s.Rejected[adaptive.RejectStreams] != 1 {
		t.Fatalf("in flight %d, streams %+v, rejected %v; want 0, 2 open of 2 opened, one streams refusal", s.InFlight, s.Streams, s.Rejected)
	}
	g.Tick(clk.Advance(250 * time.Millisecond))
	if s, _ = g.Group("s"); s.Latency.Successes != 2 || s.Latency.Max > 11*time.Millisecond {
		t.Fatalf("latency %d successes, max %v; want the 2 streams' times to their first byte", s.Latency.Successes, s.Latency.Max)
	}
	for i := range held {
		held[i].End()
	}
}
