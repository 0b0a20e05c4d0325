package gate

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

const priorityConfig = `
[[group]]
name = "api"
priority = "header:X-Priority"
  [group.concurrency]
  law = "fixed"
  limit = 2
  [group.targets]
  cpu = 0.8
  memory = 0.85
  [group.queue]
  max = 0
`

// TestMemoryGuardKeepsCritical: memory beyond its target admits only
// critical requests (503 "memory" for the rest) until it falls back.
func TestMemoryGuardKeepsCritical(t *testing.T) {
	clk := newFakeClock()
	res := &fakeSampler{}
	g, err := New(Params{Config: config(t, priorityConfig), Clock: clk, Resources: res})
	if err != nil {
		t.Fatal(err)
	}
	res.set(0.5, 0.95)
	g.Tick(clk.Advance(250 * time.Millisecond))
	for range 3 {
		p := mustEnter(t, g, request("/", "X-Priority", "critical"))
		p.Done(Success)
		rej := mustReject(t, g, request("/", "X-Priority", "sheddable"), adaptive.RejectMemory)
		if rej.Status() != 503 {
			t.Errorf("memory rejection status %d, want 503", rej.Status())
		}
		mustReject(t, g, request("/"), adaptive.RejectMemory) // default priority
	}
	st, _ := g.Group("api")
	if st.Floor.Priority != adaptive.Critical || st.Floor.Reason != adaptive.RejectMemory {
		t.Errorf("floor = %+v, want critical/memory", st.Floor)
	}
	if s := g.Status().Resources.Memory; !s.Known || s.Value != 0.95 {
		t.Errorf("status memory = %v, want 0.95", s)
	}

	res.set(0.5, 0.6)
	g.Tick(clk.Advance(250 * time.Millisecond))
	p := mustEnter(t, g, request("/", "X-Priority", "sheddable"))
	p.Done(Success)

	// CPU beyond its target sheds below default only.
	res.set(0.95, 0.6)
	g.Tick(clk.Advance(250 * time.Millisecond))
	mustReject(t, g, request("/", "X-Priority", "sheddable"), adaptive.RejectCPU)
	p = mustEnter(t, g, request("/"))
	p.Done(Success)
	p = mustEnter(t, g, request("/", "X-Priority", "critical"))
	p.Done(Success)
}

// TestPriorityShedderKeepsCriticalSucceeding: sheddable traffic holds the
// slots and critical requests are refused at the concurrency stage; after two
// such intervals the shedder sheds the sheddable level (503 "priority") and
// critical requests get the slots.
func TestPriorityShedderKeepsCriticalSucceeding(t *testing.T) {
	g, clk := newGate(t, priorityConfig)
	var held []Pass
	for tick := range 2 {
		for range 2 { // sheddable traffic takes the slots, or is refused once they are held
			if len(held) < 2 {
				held = append(held, mustEnter(t, g, request("/", "X-Priority", "sheddable")))
			} else {
				mustReject(t, g, request("/", "X-Priority", "sheddable"), adaptive.RejectConcurrency)
			}
		}
		for range 5 {
			mustReject(t, g, request("/", "X-Priority", "critical"), adaptive.RejectConcurrency)
		}
		g.Tick(clk.Advance(250 * time.Millisecond))
		info := g.testGroup(t, "api").info.Load()
		if c := info.sample.ByPriority[adaptive.Critical]; c.Arrived != 5 || c.Rejected != 5 {
			t.Fatalf("tick %d: critical traffic %+v, want 5 arrived, 5 rejected", tick, c)
		}
		if c := info.sample.ByPriority[adaptive.Sheddable]; c.Arrived != 2 || c.Rejected != 2*tick {
			t.Fatalf("tick %d: sheddable traffic %+v, want 2 arrived, %d rejected", tick, c, 2*tick)
		}
	}
	mustReject(t, g, request("/", "X-Priority", "sheddable"), adaptive.RejectPriority)
	for _, p := range held {
		p.Done(Success)
	}
	for i := range 10 {
		a := mustEnter(t, g, request("/", "X-Priority", "critical"))
		b := mustEnter(t, g, request("/", "X-Priority", "critical"))
		mustReject(t, g, request("/", "X-Priority", "sheddable"), adaptive.RejectPriority)
		a.Done(Success)
		b.Done(Success)
		if i%4 == 3 {
			g.Tick(clk.Advance(250 * time.Millisecond))
		}
	}
}
