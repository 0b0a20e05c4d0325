package redis

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// replyGate is a TCP relay in front of a real Redis that forwards every
// command at once but, while held, keeps Redis's replies back: a call it
// holds is applied by Redis and never answered in time, as on a host too
// starved to read the reply within the renewal's budget.
type replyGate struct {
	ln   net.Listener
	to   string
	mu   sync.Mutex
	cond *sync.Cond
	held bool
	wg   sync.WaitGroup
}

func newReplyGate(t *testing.T, to string) *replyGate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &replyGate{ln: ln, to: to}
	g.cond = sync.NewCond(&g.mu)
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(func() {
		ln.Close()
		g.hold(false)
		g.wg.Wait()
	})
	return g
}

func (g *replyGate) addr() string { return g.ln.Addr().String() }

// hold keeps (true) or lets through (false) the replies.
func (g *replyGate) hold(on bool) {
	g.mu.Lock()
	g.held = on
	g.mu.Unlock()
	g.cond.Broadcast()
}

func (g *replyGate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("tcp", g.to)
		if err != nil {
			c.Close()
			continue
		}
		g.wg.Add(2)
		go func() { // commands: at once
			defer g.wg.Done()
			_, _ = io.Copy(r, c)
			r.Close()
		}()
		go func() { // replies: not while held
			defer g.wg.Done()
			defer c.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				g.mu.Lock()
				for g.held {
					g.cond.Wait()
				}
				g.mu.Unlock()
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// leaseRecord reads the "o" of id's lease record on the quota api's key "":
// the units Redis counts as held by the node, its last grant included.
func leaseRecord(t *testing.T, srv *server, id string) int64 {
	t.Helper()
	v, err := srv.Client().HGet(bg, "sluice:api:lease:{}", id).Result()
	if err != nil {
		t.Fatalf("lease record of %s: %v", id, err)
	}
	var o int64
	if _, err := fmt.Sscanf(v, "%d", &o); err != nil {
		t.Fatalf("lease record %q: %v", v, err)
	}
	return o
}

// TestLeasedAbandonedRenewal: a renewal that Redis applied but whose answer
// came after its budget (the node took it for failed) loses no quota. Its
// grant left the stock and never reached the node; the node's next
// answered renewal tells Redis which renewal it last received, and Redis
// undoes the one it applied since (its grant back to the stock, its
// return taken again). Judged by the accounts: after the node has given
// back what it holds, the stock has the burst less what the node admitted,
// plus the refill (a unit per 20 s: none in a run of a few seconds).
// Before the fix, Redis kept the lost grant counted until the lease
// expired and never gave it back: the stock was short by it (-502 units).
func TestLeasedAbandonedRenewal(t *testing.T) {
	srv := startServer(t)
	g := newReplyGate(t, srv.Addr())
	const burst = 100_000
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 0.05, Burst: burst, Sync: limits.SyncLeased,
		Lease: LeaseParams{Period: 20 * time.Millisecond, TTL: 30 * time.Second}}
	l, err := New(Params{StoreParams: StoreParams{Address: g.addr(), Heartbeat: -1, Timeout: 20 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, LimiterParams: p})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	rounds := l.rounds()
	admitted := awaitLease(t, l, "", 10*time.Second)
	// A demand of a few hundred units a period, so that each renewal
	// grants what the period's decisions took.
	take := func(n int) {
		for range n {
			if l.Allow("", 1).Allowed {
				admitted++
			}
		}
	}
	for range 5 {
		take(200)
		awaitRounds(t, l, rounds, 1)
	}
	le := (*l.lease.leases.Load())[""]
	id := l.s.nodeID
	lost := int64(0)
	for try := 0; lost <= 0; try++ {
		if try == 5 {
			t.Fatalf("no held renewal granted anything in 5 tries: the test cannot judge (%+v)", l.Status())
		}
		// Hold the replies, use what the lease holds, and wait for a
		// round that fails: Redis applied it (the relay forwarded it).
		g.hold(true)
		held, _ := le.a.Held()
		take(int(max(0, held-1)))
		errs := l.Status().RenewalErrors
		for l.Status().RenewalErrors == errs {
			awaitRounds(t, l, rounds, 1)
		}
		// What Redis counts as held, against what the node holds: the
		// grant that never reached the node.
		held, _ = le.a.Held()
		lost = leaseRecord(t, srv, id) - held
		g.hold(false)
		// Back on Redis: a renewal answered.
		for ok := l.Status().Renewals; l.Status().Renewals <= ok+1; {
			awaitRounds(t, l, rounds, 1)
		}
	}
	take(500)
	awaitRounds(t, l, rounds, 2)
	if err := l.Close(); err != nil { // gives back what it holds
		t.Fatal(err)
	}
	p.Sync, p.Lease = limits.SyncExact, LeaseParams{}
	exact, err := New(Params{StoreParams: StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second}, LimiterParams: p})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	refill := int64(0.05*time.Since(start).Seconds()) + 1
	if r := exact.Allow("", 0); r.Remaining < burst-admitted || r.Remaining > burst-admitted+refill {
		t.Fatalf("after a renewal was abandoned (%d units granted and not received) and the node gave back: %d remaining, want %d - %d admitted = %d (%+d)",
			lost, r.Remaining, burst, admitted, burst-admitted, r.Remaining-(burst-admitted))
	}
}

// TestLeasedUndo: the renewal script undoes the last renewal it applied for
// a node when the node's next one says it never received it, and ignores
// a renewal overtaken by a later one (the calls at one injected instant of
// a bucket of 2,000: no refill; answers "grant held outstanding demand
// avail ...").
func TestLeasedUndo(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	at := time.Unix(1_700_000_000, 0)
	renew := func(held, want, debit, seq, acked int64) []int64 {
		return renewCall(t, c, at, "a", held, 1000, want, 0, debit, 0, seq, acked)
	}
	if f := renew(0, 150, 0, 1, 0); f[0] != 150 || f[4] != 1850 {
		t.Fatalf("first renewal: %v, want 150 granted of 2000", f)
	}
	// Renewal 2 (with 100 units the fallback admitted) is applied, and its
	// answer lost: the node holds 100 of the 150 and reports the debit
	// again.
	if f := renew(100, 300, 100, 2, 1); f[0] != 200 || f[2] != 300 || f[4] != 1850-100-200 {
		t.Fatalf("renewal 2: %v, want 200 granted and 100 debited", f)
	}
	// Renewal 3 undoes 2 (its grant and its debit back), then debits and
	// grants anew: 1850 - 100 - 50.
	if f := renew(100, 150, 100, 3, 1); f[0] != 50 || f[1] != 100 || f[2] != 150 || f[4] != 1700 {
		t.Errorf("renewal 3 after renewal 2 was lost: %v, want 50 granted, 150 outstanding, 1700 left", f)
	}
	// Renewal 2 again, overtaken (a late copy): nothing changes.
	if f := renew(100, 300, 100, 2, 1); f[0] != 0 {
		t.Errorf("an overtaken renewal was granted: %v", f)
	}
	// Renewal 4, which received 3: nothing to undo.
	if f := renew(150, 150, 0, 4, 3); f[0] != 0 || f[2] != 150 || f[4] != 1700 {
		t.Errorf("renewal 4 after renewal 3 was received: %v, want nothing granted, 150 outstanding, 1700 left", f)
	}
	// Another limiter of the node (a reload), whose number differs, undoes
	// nothing of the first one's.
	args := func(inst, seq, acked int64) []any {
		return []any{"a", 2000, 100, formatRate(2000), 2000, 3, inst,
			int64(0), 0, 1000, 150, "0", 0, 0, 0, seq, acked, at.Unix(), int64(at.Nanosecond())}
	}
	scr := callerTimeRenewals[TokenBucket]
	text, err := c.Eval(bg, scr.src, []string{"sluice:api:gcra:{}", "sluice:api:lease:{}"}, args(2, 5, 0)...).Text()
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(text); len(f) < 5 || f[4] != strconv.Itoa(1700-150) {
		t.Errorf("a second limiter's first renewal: %q, want 150 granted from 1700, nothing undone", text)
	}
}

// TestLeasedUndoFixedWindow: the same undo on a fixed window's stock (a
// window of 10 s and 1,000 units, the calls at one injected instant inside
// it): the lost grant and debit go back to the window's count.
func TestLeasedUndoFixedWindow(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	at := time.Unix(1_700_000_005, 0) // mid-window
	scr := callerTimeRenewals[FixedWindow]
	renew := func(held, want, debit, seq, acked int64) []int64 {
		t.Helper()
		args := []any{"a", 20_000, 100, int64(10 * time.Second), 1000, 3, 1,
			held, 0, 50, want, "0", 0, debit, 0, seq, acked, at.Unix(), int64(at.Nanosecond())}
		text, err := c.Eval(bg, scr.src, []string{"sluice:api:fw:{}", "sluice:api:lease:{}"}, args...).Text()
		if err != nil {
			t.Fatal(err)
		}
		return renewalFields(t, text)
	}
	if f := renew(0, 150, 0, 1, 0); f[0] != 150 || f[4] != 850 {
		t.Fatalf("first renewal: %v, want 150 granted of 1000", f)
	}
	if f := renew(100, 300, 100, 2, 1); f[0] != 200 || f[4] != 550 {
		t.Fatalf("renewal 2 (its answer lost): %v, want 200 granted and 100 debited", f)
	}
	if f := renew(100, 150, 100, 3, 1); f[0] != 50 || f[2] != 150 || f[4] != 700 {
		t.Errorf("renewal 3 after renewal 2 was lost: %v, want 50 granted, 150 outstanding, 700 left", f)
	}
}
