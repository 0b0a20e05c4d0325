package redis

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

// startCluster starts a Redis Cluster of three masters on loopback, built
// with redis-cli --cluster create, and waits until every node reports the
// cluster ok.
func startCluster(t *testing.T) []*server {
	t.Helper()
	cli := needBinary(t, "redis-cli")
	nodes := make([]*server, 3)
	args := []string{"--cluster", "create"}
	for i := range nodes {
		nodes[i] = startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		args = append(args, nodes[i].Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Nothing announces that a node sees the cluster ok (no notification, no
	// blocking command): poll each node's own report, paced by a ticker,
	// within one deadline that also bounds the calls.
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	pace := time.NewTicker(5 * time.Millisecond)
	defer pace.Stop()
	for _, n := range nodes {
		c := n.Client()
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("node %s: cluster not ok within 20s: %q %v", n.Addr(), info, err)
			case <-pace.C:
			}
		}
	}
	return nodes
}

// TestCluster runs the GCRA on a three-master Redis Cluster: keys of many
// tenants land on every master (the hash tag is the tenant), and each
// decides exactly as the local token bucket. The production clock works
// there too.
func TestCluster(t *testing.T) {
	nodes := startCluster(t)
	seeds := []string{nodes[0].Addr(), nodes[1].Addr()} // a seed list need not name every node
	s, err := openAtCallerTime(StoreParams{ClusterAddresses: seeds, Heartbeat: -1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 3, Burst: 5}
	l, err := s.NewLimiter(p)
	if err != nil {
		t.Fatal(err)
	}
	steps := randomSteps(7, p, 40)
	for k := range 30 {
		key := "tenant-" + strconv.Itoa(k)
		local := must(limits.NewTokenBucket(limits.TokenBucketParams{Rate: 3, Burst: 5}))
		for i, st := range steps {
			now := t0.Add(st.at)
			if got, want := l.AllowAt(key, now, st.n), local.AllowAt(now, st.n); got != want {
				t.Fatalf("%s step %d: redis %+v, local %+v; status %+v", key, i, got, want, l.Status())
			}
		}
	}
	for _, n := range nodes {
		if size, err := n.Client().DBSize(bg).Result(); err != nil || size == 0 {
			t.Errorf("node %s holds %d keys (%v), want some of the 30", n.Addr(), size, err)
		}
	}

	prod, err := New(Params{
		StoreParams:   StoreParams{ClusterAddresses: seeds, Heartbeat: -1, Timeout: time.Second},
		LimiterParams: LimiterParams{Name: "api", Algorithm: SlidingWindow, Limit: 10, Window: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for k := range 30 {
		if r := prod.Allow("tenant-"+strconv.Itoa(k), 4); !r.Allowed || r.Remaining != 6 {
			t.Fatalf("production clock on the cluster: %+v; status %+v", r, prod.Status())
		}
	}
	if st := prod.Status(); st.StoreDecisions != 30 || st.Errors != 0 {
		t.Fatalf("status %+v", st)
	}
	// The heartbeat registry lives on one of the masters like any key.
	if n, err := prod.s.beat(false); err != nil || n != 1 {
		t.Fatalf("heartbeat on the cluster: %d, %v", n, err)
	}

	// Leased mode: the keys of several slots, each renewed by a call of
	// its own (a lease's state key and hash share their key's slot).
	leased, err := New(Params{
		StoreParams: StoreParams{ClusterAddresses: seeds, Heartbeat: -1, Timeout: time.Second},
		LimiterParams: LimiterParams{Name: "leased", Algorithm: TokenBucket, Rate: 1000, Burst: 1000, Sync: limits.SyncLeased,
			Lease: LeaseParams{Period: 20 * time.Millisecond, MaxKeys: 8}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer leased.Close()
	// Every key busy at once (a key left idle would be given back).
	deadline := time.Now().Add(10 * time.Second)
	for st := leased.Status(); st.Leases < 8 || st.Held < 8; st = leased.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("leased on the cluster: %+v", st)
		}
		for k := range 8 {
			leased.Allow("tenant-"+strconv.Itoa(k), 1)
		}
	}
	if st := leased.Status(); st.RenewalErrors != 0 {
		t.Fatalf("leased on the cluster: %+v", st)
	}
}
