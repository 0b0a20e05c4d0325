package gate

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// rejectedKeysConfig is a group with a per-key quota of one request, none
// renewed within the test, so every request after a key's first is refused.
const rejectedKeysConfig = `
[[group]]
name = "g"
key = "header:X-Key"
  [group.rate]
  algorithm = "token_bucket"
  rate = 0.001
  burst = 1
  [group.concurrency]
  law = "fixed"
  limit = 100
`

// TestRejectedKeysNameWhoIsLimited: the read-out lists the keys rejected
// most, most first, with the reason of their latest rejection, and their
// counts halve each minute of control ticks so they follow the present.
func TestRejectedKeysNameWhoIsLimited(t *testing.T) {
	g, clk := newGate(t, rejectedKeysConfig)
	send := func(key string, n int) {
		for range n {
			if p, _, ok := g.Enter(request("/", "X-Key", key)); ok {
				p.Done(Success)
			}
		}
	}
	send("greedy", 41) // 40 refused
	send("busy", 11)   // 10
	send("calm", 2)    // 1
	st, _ := g.Group("g")
	want := []RejectedKey{{Key: "greedy", Count: 40, Reason: adaptive.RejectRate},
		{Key: "busy", Count: 10, Reason: adaptive.RejectRate}, {Key: "calm", Count: 1, Reason: adaptive.RejectRate}}
	if fmt.Sprint(st.RejectedKeys) != fmt.Sprint(want) || st.Rejected[adaptive.RejectRate] != 51 {
		t.Fatalf("rejected keys %v (rate rejections %d), want %v (51)", st.RejectedKeys, st.Rejected[adaptive.RejectRate], want)
	}
	g.Tick(clk.Advance(250 * time.Millisecond)) // the first tick starts the decay's clock
	g.Tick(clk.Advance(rejectedKeysDecay))
	st, _ = g.Group("g")
	want = []RejectedKey{{Key: "greedy", Count: 20, Reason: adaptive.RejectRate}, {Key: "busy", Count: 5, Reason: adaptive.RejectRate}}
	if fmt.Sprint(st.RejectedKeys) != fmt.Sprint(want) {
		t.Errorf("a minute later: %v, want %v (halved, calm's 1 gone)", st.RejectedKeys, want)
	}
}

// TestRejectedKeysBounded: however many keys are refused, the read-out shows
// at most 10, and the summary holds a bounded number.
func TestRejectedKeysBounded(t *testing.T) {
	g, _ := newGate(t, rejectedKeysConfig)
	for i := range 1000 {
		key := fmt.Sprint("k", i%200)
		if p, _, ok := g.Enter(request("/", "X-Key", key)); ok {
			p.Done(Success)
		}
	}
	st, _ := g.Group("g")
	if len(st.RejectedKeys) != rejectedKeysShown {
		t.Errorf("%d keys shown, want %d", len(st.RejectedKeys), rejectedKeysShown)
	}
	if n := g.testGroup(t, "g").c.rejectedKeys.Len(); n != rejectedKeysTracked {
		t.Errorf("%d keys tracked, want %d", n, rejectedKeysTracked)
	}
}

// TestRejectedKeysNoneWithoutAKey: a group without a key lists none.
func TestRejectedKeysNoneWithoutAKey(t *testing.T) {
	g, _ := newGate(t, `
[[group]]
name = "g"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
`)
	p := mustEnter(t, g, request("/"))
	defer p.Done(Success)
	if _, rej, ok := g.Enter(request("/")); ok || rej.Reason != adaptive.RejectConcurrency {
		t.Fatalf("second request: ok %v %v, want a concurrency rejection", ok, rej.Reason)
	}
	if st, _ := g.Group("g"); len(st.RejectedKeys) != 0 {
		t.Errorf("rejected keys %v without a key", st.RejectedKeys)
	}
}

// TestRejectionWithAKeyDoesNotAllocate: counting the key costs the refusal
// no allocation.
func TestRejectionWithAKeyDoesNotAllocate(t *testing.T) {
	g, _ := newGate(t, rejectedKeysConfig)
	r := request("/", "X-Key", "k")
	c, ok := g.Classify(r), true
	if p, _, admitted := g.EnterClass(r.Context(), c); admitted {
		p.Done(Success)
	}
	if n := testing.AllocsPerRun(1000, func() {
		_, _, ok = g.EnterClass(r.Context(), c)
	}); n != 0 || ok {
		t.Errorf("a refused request allocates %v times (admitted %v)", n, ok)
	}
}
