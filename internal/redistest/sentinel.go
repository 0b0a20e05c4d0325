package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StartReplica starts a redis-server replicating master (with the master's
// Password, which the replica then requires too), and waits until its link
// to the master is up.
func StartReplica(t testing.TB, master *Server, extra ...string) *Server {
	t.Helper()
	r := New(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port())}, extra...)...)
	r.Password = master.Password
	r.Start()
	c := r.Client()
	WaitFor(t, 15*time.Second, "replica "+r.Addr()+" linked to its master", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	return r
}

// Sentinel is a redis-sentinel child process watching one master, killed
// when the test ends.
type Sentinel struct {
	t        testing.TB
	port     int
	dir      string
	password string   // its requirepass; "": none
	proc     *process // nil until started
}

// Failover timings of the sentinels StartSentinel starts: a master is
// down after DownAfter without answers.
const DownAfter = 500 * time.Millisecond

// StartSentinel starts a redis-sentinel watching master under the name
// name, with the quorum given (how many sentinels must agree that the
// master is down), quick to fail over, and waits until it answers PING.
// A master with a Password is watched with it (auth-pass).
func StartSentinel(t testing.TB, master *Server, name string, quorum int) *Sentinel {
	t.Helper()
	return StartSentinelAuth(t, master, name, quorum, "")
}

// StartSentinelAuth is StartSentinel for a sentinel that requires password
// of its clients (requirepass in its configuration; "": none), which it
// also gives the other sentinels. Master and AwaitPeers use it.
func StartSentinelAuth(t testing.TB, master *Server, name string, quorum int, password string) *Sentinel {
	t.Helper()
	bin := Need(t, "redis-sentinel")
	s := &Sentinel{t: t, dir: t.TempDir(), password: password}
	t.Cleanup(s.Stop)
	t.Cleanup(func() { // first: the log is still there
		if t.Failed() {
			b, _ := os.ReadFile(s.dir + "/sentinel.log")
			t.Logf("redis-sentinel on %s, the end of its log:\n%s", s.Addr(), lastLines(string(b), 40))
		}
	})
	if _, err := onFreePort(func(port int) error { s.port = port; return s.run(bin, master, name, quorum) }); err != nil {
		t.Fatalf("starting redis-sentinel: %v", err)
	}
	return s
}

func (s *Sentinel) run(bin string, master *Server, name string, quorum int) error {
	conf := s.dir + "/sentinel.conf" // the sentinel rewrites it: it must be writable
	body := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
protected-mode no
sentinel resolve-hostnames no
sentinel monitor %s 127.0.0.1 %d %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s 3000
sentinel parallel-syncs %s 1
`, s.port, s.dir, name, master.Port(), quorum, name, DownAfter.Milliseconds(), name, name)
	if master.Password != "" {
		body += fmt.Sprintf("sentinel auth-pass %s %s\n", name, master.Password)
	}
	if s.password != "" {
		body += fmt.Sprintf("requirepass %s\n", s.password)
	}
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return err
	}
	var err error
	s.proc, err = launch("redis-sentinel on "+s.Addr(), bin, []string{conf}, s.dir+"/sentinel.log",
		func() error { return ping(s.Addr(), nil) })
	return err
}

// Addr is the sentinel's "host:port".
func (s *Sentinel) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Master asks the sentinel which address it holds for the master name.
func (s *Sentinel) Master(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c := goredis.NewSentinelClient(&goredis.Options{Addr: s.Addr(), Password: s.password, MaxRetries: -1})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// AwaitPeers waits until the sentinel knows the other sentinels and the
// replicas of the master name (they find each other through the master,
// every few seconds): a master killed sooner could not reach a quorum.
func (s *Sentinel) AwaitPeers(name string, sentinels, replicas int) {
	s.t.Helper()
	c := goredis.NewSentinelClient(&goredis.Options{Addr: s.Addr(), Password: s.password, MaxRetries: -1})
	defer c.Close()
	WaitFor(s.t, 30*time.Second, "sentinel "+s.Addr()+" knows its peers", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		peers, err := c.Sentinels(ctx, name).Result()
		if err != nil || len(peers) < sentinels {
			return false
		}
		reps, err := c.Replicas(ctx, name).Result()
		return err == nil && len(reps) >= replicas
	})
}

// Stop kills the sentinel, if it runs, and waits for it to exit.
func (s *Sentinel) Stop() { s.proc.stop() }

// WaitFor polls cond, paced by a ticker, until it holds or limit has
// passed (the test then fails). For conditions that nothing announces: a
// replication link, a failover.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	pace := time.NewTicker(5 * time.Millisecond)
	defer pace.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, limit)
		case <-pace.C:
		}
	}
}
