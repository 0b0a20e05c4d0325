package gate

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestPassWaited: a request admitted at once waited 0 and was admitted at its
// arrival; one that queued for a slot waited the time on the gate's clock
// between its arrival and the slot, and was admitted when it got the slot.
func TestPassWaited(t *testing.T) {
	g, clk := newGate(t, `
[[group]]
name = "one"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 1
  max_wait = "1h"
  codel_target = "0s"
`)
	var zero Pass
	if w, at := zero.Waited(), zero.Admitted(); w != 0 || !at.IsZero() {
		t.Fatalf("the zero Pass waited %v, admitted at %v", w, at)
	}
	c := g.Classify(request("/"))
	arrived := clk.Now()
	first, _, ok := g.EnterClass(context.Background(), c)
	if !ok || first.Waited() != 0 || !first.Admitted().Equal(arrived) {
		t.Fatalf("admitted %v at once, waited %v, at %v (arrived at %v)", ok, first.Waited(), first.Admitted(), arrived)
	}
	second := make(chan Pass, 1)
	go func() {
		p, _, _ := g.EnterClass(context.Background(), c)
		second <- p
	}()
	for {
		if st, _ := g.Group("one"); st.Queued == 1 {
			break
		}
		runtime.Gosched()
	}
	clk.Advance(30 * time.Millisecond)
	first.Done(Success)
	p := <-second
	if w := p.Waited(); w != 30*time.Millisecond {
		t.Errorf("the queued request waited %v, want 30ms", w)
	}
	if at, want := p.Admitted(), arrived.Add(30*time.Millisecond); !at.Equal(want) {
		t.Errorf("the queued request was admitted at %v, want %v", at, want)
	}
	p.Done(Success)
}
