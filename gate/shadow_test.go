package gate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate/spec"
)

// trace is what a run of drive saw: per request, admitted or rejected, and
// the would-be reason of the admitted ones that a shadowed stage refused.
type trace struct {
	arrived, admitted int
	rejected, would   map[adaptive.RejectReason]int
	maxSlots          int // the most slots held at once
}

// drive sends requests to path at perSec, evenly, for d, on g's fake clock,
// through a fake backend that answers each after latency whatever the load
// (a service that keeps up), ticking the control loop every interval. Each
// admitted request finishes (Done) at its arrival plus latency. It checks
// at every step that the group never holds more slots than its limit.
func drive(t *testing.T, g *Gate, clk *fakeClock, path string, perSec float64, d, latency time.Duration) trace {
	t.Helper()
	tr := trace{rejected: map[adaptive.RejectReason]int{}, would: map[adaptive.RejectReason]int{}}
	gr := g.testGroup(t, g.Classify(request(path)).g.name)
	type call struct {
		end time.Time
		p   Pass
	}
	var calls []call // in order of end: the latency is constant
	interval := g.Config().Interval
	start := clk.Now()
	nextTick := start.Add(interval)
	until := func(at time.Time) { // completions and ticks up to at, in time order
		for {
			switch {
			case len(calls) > 0 && !calls[0].end.After(at) && calls[0].end.Before(nextTick):
				clk.Set(calls[0].end)
				calls[0].p.Done(Success)
				calls = calls[1:]
			case !nextTick.After(at):
				clk.Set(nextTick)
				g.Tick(nextTick)
				nextTick = nextTick.Add(interval)
			default:
				clk.Set(at)
				return
			}
		}
	}
	gap := time.Duration(float64(time.Second) / perSec)
	for at := start; at.Before(start.Add(d)); at = at.Add(gap) {
		until(at)
		tr.arrived++
		p, rej, ok := g.Enter(request(path))
		if !ok {
			tr.rejected[rej.Reason]++
			continue
		}
		tr.admitted++
		if w := p.Shadowed(); w != adaptive.RejectNone {
			tr.would[w]++
		}
		calls = append(calls, call{at.Add(latency), p})
		if n := gr.conc.InFlight(); n > gr.conc.Limit() {
			t.Fatalf("%d slots held, limit %d", n, gr.conc.Limit())
		} else {
			tr.maxSlots = max(tr.maxSlots, n)
		}
	}
	until(start.Add(d).Add(latency))
	if len(calls) != 0 {
		t.Fatalf("%d calls left", len(calls))
	}
	return tr
}

func sum(m map[adaptive.RejectReason]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkCounts checks that the group's read-out counts the would-be
// rejections tr saw, and no real ones, and that nothing is left beyond the
// limit once every request is done.
func checkCounts(t *testing.T, g *Gate, name string, tr trace) ShadowStatus {
	t.Helper()
	st, _ := g.Group(name)
	for r := range adaptive.NumRejections {
		why := adaptive.RejectReason(r)
		if got, want := st.Shadow.Rejected[r], uint64(tr.would[why]); got != want {
			t.Errorf("read-out: %d would-be %v, the passes said %d", got, why, want)
		}
		if got, want := st.Rejected[r], uint64(tr.rejected[why]); got != want {
			t.Errorf("read-out: %d rejected %v, the run saw %d", got, why, want)
		}
	}
	if st.Shadow.Beyond != 0 || st.Shadow.Waiting != 0 || st.InFlight != 0 {
		t.Errorf("after the run: beyond %d, waiting %d, in flight %d; want 0", st.Shadow.Beyond, st.Shadow.Waiting, st.InFlight)
	}
	if st.Arrived != uint64(tr.arrived) {
		t.Errorf("arrived %d, want %d", st.Arrived, tr.arrived)
	}
	return st.Shadow
}

// TestShadowGroupAdmitsAllAtThreeTimesItsLimit: a shadowed group with a
// fixed limit of 4 and a backend answering in 100 ms (40 requests/s) gets
// 120 requests/s for 5 s: every request is admitted, none takes a slot (the
// model of enforcement decides), and the would-be rejections (concurrency
// without a queue; queue_full beyond a queue of 10, whose waiters are served
// as slots free) are about two thirds of the requests, counted the same by
// the passes and the read-out.
func TestShadowGroupAdmitsAllAtThreeTimesItsLimit(t *testing.T) {
	for _, tt := range []struct {
		name, queue string
		reason      adaptive.RejectReason
	}{
		{"no queue", "max = 0", adaptive.RejectConcurrency},
		{"queue", "max = 10", adaptive.RejectQueueFull},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, clk := newGate(t, `
[[group]]
name = "api"
mode = "shadow"
  [group.concurrency]
  law = "fixed"
  limit = 4
  [group.queue]
  `+tt.queue)
			tr := drive(t, g, clk, "/", 120, 5*time.Second, 100*time.Millisecond)
			if tr.admitted != tr.arrived || sum(tr.rejected) != 0 {
				t.Fatalf("admitted %d of %d, rejected %v", tr.admitted, tr.arrived, tr.rejected)
			}
			if tr.maxSlots != 0 {
				t.Errorf("at most %d slots held, want none in shadow", tr.maxSlots)
			}
			sh := checkCounts(t, g, "api", tr)
			would := tr.would[tt.reason]
			if would != sum(tr.would) {
				t.Errorf("would-be rejections %v, want %v only", tr.would, tt.reason)
			}
			// 40 of the 120 a second find a slot, at once or after a wait
			// in the queue.
			waited := int(sh.Queued)
			if lo, hi := tr.arrived*6/10, tr.arrived*7/10; would < lo || would > hi {
				t.Errorf("%d would-be rejections (and %d would-have-waited) of %d requests, want about 2/3", would, waited, tr.arrived)
			}
			if (tt.queue == "max = 0") != (waited == 0) {
				t.Errorf("%d would have waited with queue %q", waited, tt.queue)
			}
			if sh.Mode != spec.ModeShadow {
				t.Errorf("mode %q", sh.Mode)
			}
		})
	}
}

// TestShadowRateRule: a shadowed rate rule of 10/s (burst 10) in a group
// that enforces its concurrency limit admits every request of 30/s for 5 s,
// counts those over the rate as would-be "rate" rejections, exactly as many
// as the same rule refuses when it enforces (its tokens are spent only by
// the requests it allows, in both), and a leaky_queue in shadow does not
// make anyone wait.
func TestShadowRateRule(t *testing.T) {
	conf := func(mode string) string {
		return `
[[group]]
name = "api"
  [group.rate]
  rate = 10
  burst = 10
  mode = "` + mode + `"
  [group.concurrency]
  law = "fixed"
  limit = 100
`
	}
	g, clk := newGate(t, conf("shadow"))
	tr := drive(t, g, clk, "/", 30, 5*time.Second, 50*time.Millisecond)
	if tr.admitted != tr.arrived {
		t.Fatalf("admitted %d of %d, rejected %v", tr.admitted, tr.arrived, tr.rejected)
	}
	sh := checkCounts(t, g, "api", tr)
	if sh.Mode != spec.ModeEnforce || sh.RateMode != spec.ModeShadow {
		t.Errorf("modes %q, %q", sh.Mode, sh.RateMode)
	}
	ge, clke := newGate(t, conf("enforce"))
	te := drive(t, ge, clke, "/", 30, 5*time.Second, 50*time.Millisecond)
	if tr.would[adaptive.RejectRate] != te.rejected[adaptive.RejectRate] || te.rejected[adaptive.RejectRate] < 80 {
		t.Errorf("shadow: %d would-be rate rejections; enforced: %d rejected (want equal, about 90)",
			tr.would[adaptive.RejectRate], te.rejected[adaptive.RejectRate])
	}

	// A leaky_queue paces what it admits when it enforces (and refuses at
	// once a request whose deadline comes before its turn); not in shadow.
	leaky := func(mode string) *Gate {
		g, _ := newGate(t, `
[[group]]
name = "api"
  [group.rate]
  algorithm = "leaky_queue"
  rate = 1
  max_wait = "1m"
  mode = "`+mode+`"
`)
		return g
	}
	for _, mode := range []string{"enforce", "shadow"} {
		g := leaky(mode)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		admitted := 0
		for range 3 { // the second and third would wait 1 s and 2 s
			p, _, ok := g.EnterClass(ctx, g.Classify(request("/")))
			if ok {
				admitted++
				p.Done(Success)
			}
		}
		cancel()
		if want := map[string]int{"enforce": 1, "shadow": 3}[mode]; admitted != want {
			t.Errorf("leaky_queue, mode %s: %d of 3 admitted at once, want %d", mode, admitted, want)
		}
	}
}

// TestShadowMatchesEnforcementAtOnePointTwo is the equivalence: at
// 1.2 times what the group lets through, with a service that keeps up, the
// would-be rejections of a shadowed group are within 10 % of the same
// group's rejections when it enforces.
//
// Setup: two gates on fake clocks, one in shadow and one enforcing, get the
// same arrival trace, 120 requests/s evenly for 20 s, through the same fake
// backend that answers every request in 100 ms whatever the load (it keeps
// up: 1.2 times the group's limit of 10 slots, 100 requests/s, is more than
// the group admits, not more than the service can carry). The group's law is
// aimd from 5 to at most 10, so the limit is learned in both runs (a drop-free
// service lets it climb to 10) and the shadowed law must learn the same one
// from the load it sees (the requests beyond the limit included). Without a
// queue, enforcement refuses what finds no slot ("concurrency"): the shadow
// counts that at the same instants, since the requests it admits beyond the
// limit hold no slot.
func TestShadowMatchesEnforcementAtOnePointTwo(t *testing.T) {
	conf := func(mode string) string {
		return `
[[group]]
name = "api"
mode = "` + mode + `"
  [group.concurrency]
  law = "aimd"
  initial = 5
  min = 1
  max = 10
  [group.targets]
  latency = "1s"
  [group.queue]
  max = 0
`
	}
	gs, cs := newGate(t, conf("shadow"))
	ge, ce := newGate(t, conf("enforce"))
	ts := drive(t, gs, cs, "/", 120, 20*time.Second, 100*time.Millisecond)
	te := drive(t, ge, ce, "/", 120, 20*time.Second, 100*time.Millisecond)
	if ts.admitted != ts.arrived {
		t.Fatalf("shadow admitted %d of %d", ts.admitted, ts.arrived)
	}
	checkCounts(t, gs, "api", ts)
	would, rejected := sum(ts.would), sum(te.rejected)
	t.Logf("shadow: %d would-be rejections %v; enforce: %d rejections %v, of %d", would, ts.would, rejected, te.rejected, te.arrived)
	if rejected < te.arrived/10 {
		t.Fatalf("enforced: only %d of %d rejected: not over the limit", rejected, te.arrived)
	}
	if d := float64(would-rejected) / float64(rejected); d < -0.1 || d > 0.1 {
		t.Errorf("would-be rejections %d differ from the enforced %d by %.1f %%, want within 10 %%", would, rejected, 100*d)
	}
	ls, _ := gs.Group("api")
	le, _ := ge.Group("api")
	if ls.Limit != le.Limit {
		t.Errorf("learned limit: shadow %d, enforce %d", ls.Limit, le.Limit)
	}
}

// TestShadowToEnforceKeepsTheLearnedLimit: a group's aimd law learns its
// limit in shadow (it climbs from 5 to 40 under load); switching the group
// to enforce, by a reload that changes only the mode and by an Override,
// keeps the law itself running (the same law, the same limit), and the
// group then refuses what it only counted before.
func TestShadowToEnforceKeepsTheLearnedLimit(t *testing.T) {
	conf := func(mode string) string {
		return `
[[group]]
name = "api"
mode = "` + mode + `"
  [group.concurrency]
  law = "aimd"
  initial = 5
  max = 40
  [group.targets]
  latency = "1s"
  [group.queue]
  max = 0
`
	}
	learn := func(t *testing.T) (*Gate, *fakeClock, int) {
		g, clk := newGate(t, conf("shadow"))
		drive(t, g, clk, "/", 600, 10*time.Second, 100*time.Millisecond)
		st, _ := g.Group("api")
		if st.Limit <= 5 || st.Shadow.WouldReject() == 0 {
			t.Fatalf("in shadow: limit %d, %d would-be rejections; want it learned above 5, and some", st.Limit, st.Shadow.WouldReject())
		}
		return g, clk, st.Limit
	}
	enforces := func(t *testing.T, g *Gate, clk *fakeClock, limit int) {
		t.Helper()
		st, _ := g.Group("api")
		if st.Limit != limit || st.Shadow.Mode != spec.ModeEnforce {
			t.Fatalf("after the switch: limit %d, mode %q; want %d, enforce", st.Limit, st.Shadow.Mode, limit)
		}
		tr := drive(t, g, clk, "/", 600, time.Second, 100*time.Millisecond)
		if tr.rejected[adaptive.RejectConcurrency] == 0 || len(tr.would) != 0 {
			t.Errorf("enforcing: rejected %v, would-be %v", tr.rejected, tr.would)
		}
	}

	t.Run("reload", func(t *testing.T) {
		g, clk, limit := learn(t)
		before := g.testGroup(t, "api")
		law := before.pol.law
		res, err := g.Reload(config(t, conf("enforce")), ReloadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unchanged) != 1 || g.testGroup(t, "api") != before || before.pol.law != law {
			t.Fatalf("reload of the mode alone: %+v; the group or its law was rebuilt", res)
		}
		enforces(t, g, clk, limit)
	})
	t.Run("override", func(t *testing.T) {
		g, clk, limit := learn(t)
		gr := g.testGroup(t, "api")
		law := gr.pol.law
		c := g.Config().Group("api").Clone()
		c.Mode = spec.ModeEnforce
		if err := g.Override(c); err != nil {
			t.Fatal(err)
		}
		if gr.pol.law != law {
			t.Fatal("an override of the mode alone rebuilt the law")
		}
		st, _ := g.Group("api")
		if st.Override == nil || len(st.Override.Changes) != 1 || st.Override.Changes[0] != (FieldChange{Path: "mode", From: "shadow", To: "enforce"}) {
			t.Errorf("override read-out %+v", st.Override)
		}
		enforces(t, g, clk, limit)
		c.Mode = "shadw"
		if err := g.Override(c); err == nil {
			t.Error("an override to mode \"shadw\" was accepted")
		}
	})
}

// TestShadowShedding: a shadowed group whose memory is beyond its target
// admits the requests its guard would shed, counted as would-be "memory"
// once each (not again as "concurrency", though they find the 2 slots
// taken: a refused request takes nothing from the later stages), and the
// floor it publishes is the one enforcement would apply.
func TestShadowShedding(t *testing.T) {
	clk := newFakeClock()
	res := &fakeSampler{}
	g, err := New(Params{Config: config(t, strings.Replace(priorityConfig, `name = "api"`, `name = "api"`+"\nmode = \"shadow\"", 1)),
		Clock: clk, Resources: res})
	if err != nil {
		t.Fatal(err)
	}
	res.set(0.5, 0.95)
	g.Tick(clk.Advance(250 * time.Millisecond))
	var passes []Pass
	for _, prio := range []string{"critical", "critical", "sheddable", "default", "default"} {
		p := mustEnter(t, g, request("/", "X-Priority", prio))
		if got, want := p.Shadowed(), map[bool]adaptive.RejectReason{true: adaptive.RejectNone, false: adaptive.RejectMemory}[prio == "critical"]; got != want {
			t.Errorf("%s: would-be %v, want %v", prio, got, want)
		}
		passes = append(passes, p)
	}
	st, _ := g.Group("api")
	if st.Shadow.Rejected[adaptive.RejectMemory] != 3 || st.Shadow.WouldReject() != 3 || st.Floor.Reason != adaptive.RejectMemory || st.InFlight != 5 {
		t.Errorf("would-be %v, floor %+v, in flight %d; want 3 memory only, floor memory, 5", st.Shadow.Rejected, st.Floor, st.InFlight)
	}
	for i := range passes {
		passes[i].Done(Success)
	}
}

// TestShadowRejectedKeys: in a group whose per-key rate rule is shadowed,
// the keys enforcement would have refused are summed up apart from the keys
// refused for real: a greedy tenant over its rate shows in
// Shadow.RejectedKeys, with the would-be count and reason, and not in
// RejectedKeys; a calm one in neither. Enforcing the same rule puts the
// greedy tenant in RejectedKeys and leaves the shadow summary empty.
func TestShadowRejectedKeys(t *testing.T) {
	conf := func(mode string) string {
		return `
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 1
  burst = 1
  mode = "` + mode + `"
  [group.concurrency]
  law = "fixed"
  limit = 100
`
	}
	for _, mode := range []string{"shadow", "enforce"} {
		t.Run(mode, func(t *testing.T) {
			g, clk := newGate(t, conf(mode))
			refused := 0 // what enforcement refuses, or would
			for i := range 20 {
				clk.Advance(100 * time.Millisecond) // greedy: 10/s against 1/s
				p, _, ok := g.Enter(request("/", "X-Tenant", "greedy"))
				switch {
				case !ok:
					refused++
				case p.Shadowed() != adaptive.RejectNone:
					refused++
					p.Done(Success)
				default:
					p.Done(Success)
				}
				if i%10 == 0 { // calm: 0.5/s
					if p, _, ok := g.Enter(request("/", "X-Tenant", "calm")); !ok || p.Shadowed() != adaptive.RejectNone {
						t.Fatalf("the calm tenant was refused (mode %s)", mode)
					} else {
						p.Done(Success)
					}
				}
			}
			st, _ := g.Group("api")
			// counting is the summary that must hold greedy (the real
			// rejections' when enforcing, the would-be ones' in shadow);
			// other must stay empty.
			counting, other := st.RejectedKeys, st.Shadow.RejectedKeys
			if mode == "shadow" {
				counting, other = other, counting
			}
			if refused < 15 || len(counting) != 1 || counting[0].Key != "greedy" || counting[0].Count != uint64(refused) || counting[0].Reason != adaptive.RejectRate {
				t.Errorf("%d refused; the summary that counts them: %+v; want greedy alone, counted %d, reason rate", refused, counting, refused)
			}
			if len(other) != 0 {
				t.Errorf("the other summary: %+v, want it empty", other)
			}
		})
	}
}

// TestShadowFairShare: a shadowed group with a key counts the fair share's
// refusals as enforcement makes them: with a limit of 4 held 3 by a greedy
// tenant and 1 by a polite one, the greedy tenant's next request is a
// would-be fair_share in shadow as it is a fair_share refusal enforcing,
// the polite one's a concurrency (the passes the model gives a slot hold
// their key's share, and the model's slots count as the group's).
func TestShadowFairShare(t *testing.T) {
	conf := func(mode string) string {
		return `
[[group]]
name = "api"
mode = "` + mode + `"
key = "header:X-Tenant"
  [group.concurrency]
  law = "fixed"
  limit = 4
  [group.queue]
  max = 0
`
	}
	for _, mode := range []string{"enforce", "shadow"} {
		t.Run(mode, func(t *testing.T) {
			g, _ := newGate(t, conf(mode))
			var got []adaptive.RejectReason
			var held []Pass
			for _, tenant := range []string{"greedy", "greedy", "greedy", "polite", "greedy", "polite"} {
				p, rej, ok := g.Enter(request("/", "X-Tenant", tenant))
				switch {
				case !ok:
					got = append(got, rej.Reason)
				default:
					got = append(got, p.Shadowed())
					held = append(held, p)
				}
			}
			want := []adaptive.RejectReason{0, 0, 0, 0, adaptive.RejectFairShare, adaptive.RejectConcurrency}
			if !slices.Equal(got, want) {
				t.Errorf("decisions %v, want %v", got, want)
			}
			for i := range held {
				held[i].Done(Success)
			}
		})
	}
}
