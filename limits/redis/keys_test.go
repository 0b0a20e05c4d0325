package redis

import (
	"testing"
	"time"
)

// TestKeys checks the keys the production scripts write: their names, an
// integer value (the compact encoding), and a lifetime that ends when the
// state is fresh again, after which Redis drops them by itself (it says so
// by a keyspace notification, which the test waits for).
func TestKeys(t *testing.T) {
	srv := startServer(t, "--notify-keyspace-events", "Ex")
	c := srv.Client()
	// Subscribed before any key is written, so no expiry is missed.
	sub := c.Subscribe(bg, "__keyevent@0__:expired")
	defer sub.Close()
	if _, err := sub.Receive(bg); err != nil {
		t.Fatalf("subscribing to expiries: %v", err)
	}
	expiries := sub.Channel()
	s, err := Open(StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second, KeyPrefix: "q/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct {
		p       LimiterParams
		key     string
		maxTTL  time.Duration // the time to fresh after one request
		minTTL  time.Duration
		expires bool // short enough to wait for
	}{
		{LimiterParams{Name: "tb", Algorithm: TokenBucket, Rate: 10, Burst: 5}, "q/tb:gcra:{t-1}", 100 * time.Millisecond, 0, true},
		{LimiterParams{Name: "lb", Algorithm: LeakyBucket, Rate: 0.01, Burst: 5}, "q/lb:gcra:{t-1}", 100 * time.Second, 99 * time.Second, false},
		{LimiterParams{Name: "fw", Algorithm: FixedWindow, Limit: 5, Window: time.Hour}, "q/fw:fw:{t-1}", time.Hour, 0, false},
		{LimiterParams{Name: "sw", Algorithm: SlidingWindow, Limit: 5, Window: time.Hour}, "q/sw:sw:{t-1}", 2 * time.Hour, time.Hour, false},
		{LimiterParams{Name: "sw-short", Algorithm: SlidingWindow, Limit: 5, Window: 20 * time.Millisecond}, "q/sw-short:sw:{t-1}", 40 * time.Millisecond, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.p.Name, func(t *testing.T) {
			l, err := s.NewLimiter(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if r := l.Allow("t-1", 0); !r.Allowed {
				t.Fatalf("probe: %+v", r)
			}
			if n, _ := c.Exists(bg, tc.key).Result(); n != 0 {
				t.Fatal("a probe of cost 0 wrote the key")
			}
			if r := l.Allow("t-1", 1); !r.Allowed || l.Status().StoreDecisions != 2 {
				t.Fatalf("first request: %+v, %+v", r, l.Status())
			}
			if enc, err := c.ObjectEncoding(bg, tc.key).Result(); err != nil || enc != "int" {
				t.Errorf("key %s: encoding %q (%v), want int", tc.key, enc, err)
			}
			ttl, err := c.PTTL(bg, tc.key).Result()
			if err != nil || ttl <= tc.minTTL || ttl > tc.maxTTL {
				t.Errorf("key %s: TTL %v (%v), want in (%v, %v]", tc.key, ttl, err, tc.minTTL, tc.maxTTL)
			}
			if !tc.expires {
				return
			}
			// Redis expires the key by itself: wait for its expired event.
			timeout := time.NewTimer(5 * time.Second) // a failure's bound, not a pace
			defer timeout.Stop()
			for expired := false; !expired; {
				select {
				case m, ok := <-expiries:
					if !ok {
						t.Fatal("the subscription to expiries ended")
					}
					expired = m.Payload == tc.key
				case <-timeout.C:
					n, err := c.Exists(bg, tc.key).Result()
					t.Fatalf("key %s not expired after 5s (exists %d, %v)", tc.key, n, err)
				}
			}
			if n, err := c.Exists(bg, tc.key).Result(); err != nil || n != 0 {
				t.Fatalf("key %s expired, yet exists %d (%v)", tc.key, n, err)
			}
		})
	}
}

// TestForeignValue: a value the scripts did not write (a key clash with
// another user of the Redis) is treated as a fresh state and overwritten.
func TestForeignValue(t *testing.T) {
	srv := startServer(t)
	c := srv.Client()
	l, err := New(Params{
		StoreParams:   StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second},
		LimiterParams: LimiterParams{Name: "api", Algorithm: FixedWindow, Limit: 3, Window: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, v := range []string{"hello", "12345678901234567890123", "-5", ""} {
		c.Set(bg, "sluice:api:fw:{k}", v, 0)
		if r := l.Allow("k", 1); !r.Allowed || r.Remaining != 2 {
			t.Errorf("over %q: %+v, want a fresh window", v, r)
		}
	}
}

// TestNodes counts nodes through heartbeats, and shares the local fallback
// by the larger of the configured and the observed count.
func TestNodes(t *testing.T) {
	srv := startServer(t)
	open := func(nodes int) *Store {
		s, err := Open(StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second, Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		// Its beats are the test's, by hand, with the hour's heartbeat of
		// the store below: counted for 3 hours instead of 3 default
		// heartbeats, so that no registration lapses between them however
		// slowly the test runs (a busy machine). Only a beat reads it; the
		// store has no heartbeat goroutine.
		s.p.Heartbeat = time.Hour
		return s
	}
	a, b, c := open(2), open(1), open(1)
	l, err := a.NewLimiter(LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 60, Burst: 60})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	if n := localAdmitted(l, "one", at); n != 30 {
		t.Errorf("configured 2 nodes: local share %d, want 30", n)
	}
	for i, s := range []*Store{a, b, c} {
		n, err := s.beat(false)
		if err != nil || n != i+1 {
			t.Fatalf("beat %d: %d nodes, %v", i, n, err)
		}
	}
	if _, err := a.beat(false); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.Nodes != 3 || st.ObservedNodes != 3 {
		t.Fatalf("three nodes beating: %+v", st)
	}
	if n := localAdmitted(l, "two", at); n != 20 {
		t.Errorf("3 nodes seen: local share %d, want 20", n)
	}
	if n, err := c.beat(true); err != nil || n != 2 {
		t.Fatalf("leaving: %d nodes, %v", n, err)
	}
	if _, err := a.beat(false); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); st.Nodes != 2 || st.ObservedNodes != 2 {
		t.Fatalf("after one left: %+v", st)
	}

	// The heartbeat goroutine registers a node (its first beat is at
	// once), and Close removes it. The hook signals each beat (without
	// blocking the goroutine). The heartbeat is the others' hour: a beat
	// also drops the nodes not seen for 3 of its own heartbeats, and one of
	// 10 ms would drop a and b whenever this part starts 30 ms after their
	// beats (a busy machine).
	beats := make(chan struct{}, 1)
	d, err := openStore(StoreParams{Address: srv.Addr(), Heartbeat: time.Hour, Timeout: time.Second},
		func(int, error) {
			select {
			case beats <- struct{}{}:
			default: // one pending signal is enough: the loop reads the status
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.NewTimer(5 * time.Second) // a failure's bound, not a pace
	defer timeout.Stop()
	for d.Status().ObservedNodes != 3 { // the status is set before the hook runs
		select {
		case <-beats:
		case <-timeout.C:
			d.Close()
			t.Fatalf("the heartbeat did not register: %+v", d.Status())
		}
	}
	d.Close()
	if n, err := a.beat(false); err != nil || n != 2 {
		t.Fatalf("after Close: %d nodes, %v", n, err)
	}
}

// TestNodesHeartbeatMix: nodes with different heartbeats count each other,
// each for three of its own heartbeats (the beats at injected instants).
// A node used to drop every node whose last beat was older than three of
// its own heartbeats: one beating every 100ms dropped one beating every
// second between that one's beats, and the local shares grew.
func TestNodesHeartbeatMix(t *testing.T) {
	srv := startServer(t)
	open := func(heartbeat time.Duration) *Store {
		s, err := openAtCallerTime(StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.p.Heartbeat = heartbeat // only a beat reads it: the beats are the test's
		return s
	}
	slow, fast := open(time.Second), open(100*time.Millisecond)
	t0 := time.Unix(1_700_000_000, 0)
	beat := func(s *Store, at time.Duration, leave bool, want int) {
		t.Helper()
		if n, err := s.beatAt(t0.Add(at), leave); err != nil || n != want {
			t.Errorf("beat at +%v (heartbeat %v, leave %v): %d nodes, %v; want %d", at, s.p.Heartbeat, leave, n, err, want)
		}
	}
	beat(slow, 0, false, 1)
	beat(fast, 500*time.Millisecond, false, 2)
	beat(fast, 900*time.Millisecond, false, 2) // slow's beat is 900ms old: alive for 3 s
	beat(fast, 2900*time.Millisecond, false, 2)
	beat(slow, 3000*time.Millisecond, false, 2) // fast's beat keeps it until 3.2 s
	beat(slow, 3300*time.Millisecond, false, 1) // fast missed three of its beats
	beat(fast, 6400*time.Millisecond, false, 1) // slow's last beat held until 6.3 s
	beat(fast, 6500*time.Millisecond, true, 0)
	if n := srv.Client().Exists(bg, slow.nodesKey).Val(); n != 0 {
		t.Errorf("the registry outlived its last node")
	}
}

// localAdmitted counts what the local fallback admits for a fresh key at
// one instant: its share of the burst.
func localAdmitted(l *Limiter, key string, at time.Time) int {
	n := 0
	for l.local.AllowAt(key, at, 1).Allowed {
		n++
	}
	return n
}

// TestOddKeys: any bytes make a key (the caller's key comes from a request
// header or a path), braces included, and distinct keys never share state.
func TestOddKeys(t *testing.T) {
	srv := startServer(t)
	l, err := New(Params{
		StoreParams:   StoreParams{Address: srv.Addr(), Heartbeat: -1, Timeout: time.Second},
		LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 0.001, Burst: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := []string{"", "a}b", "a", "{x}", "}", "{", "ü ñ", "\x00\xff", "a}b}", "\r\n*1\r\n$4\r\nPING\r\n"}
	for _, k := range keys {
		if r := l.Allow(k, 1); !r.Allowed {
			t.Errorf("key %q: first request refused: %+v", k, r)
		}
	}
	for _, k := range keys {
		if r := l.Allow(k, 1); r.Allowed {
			t.Errorf("key %q: second request allowed: %+v", k, r)
		}
	}
	if st := l.Status(); st.StoreDecisions != uint64(2*len(keys)) {
		t.Fatalf("status %+v", st)
	}
}
