package redis

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Store is one Redis deployment (a server, a cluster, or a master behind
// Sentinel) that holds global quotas, shared by the limiters built on it: the
// connection pool, the health of the link (backoff and probing, see Status),
// and this node's heartbeat, by which the nodes count each other and pick up
// the quotas' definitions (SetQuota). On a single server (or master) each
// limiter batches the decisions of concurrent callers into one script call
// (see batcher); on a cluster, whose keys a batch could not mix, each
// decision is a script call of its own, and go-redis's auto-pipeliner sends
// the calls of concurrent callers together.
//
// Open does not contact Redis: a node starts, and decides by its fallback,
// while Redis is down. (NewLimiter does, for a quota's definition, waiting at
// most the Timeout.) Safe for concurrent use. Close it to stop its
// heartbeat and its limiters and to close its connections.
type Store struct {
	p      StoreParams // resolved
	client goredis.UniversalClient
	pipe   *goredis.AutoPipeliner // nil while batch
	link   *link
	dl     *deadline             // the decisions' budget
	clock  map[Algorithm]*script // the limiter scripts (tests use another clock)
	renew  map[Algorithm]*script // the renewal scripts of leased mode, likewise
	nodes  *script               // the node registry's script, likewise
	// argvTime passes each decision's now to the scripts; only the tests'
	// clock reads it (export_test.go).
	argvTime bool
	// batch lets limiters decide many requests per script call (a single
	// server: a cluster's keys may live on different nodes).
	batch bool

	nodeID   string
	nodesKey string
	observed atomic.Int32 // live nodes at the last heartbeat; 0: not known
	// renewSeq numbers leased mode's limiters and renewal calls on this
	// store, increasing (see leaser.inst, lease.acked).
	renewSeq atomic.Int64
	divisor  atomic.Int32 // the node count the local fallback divides by

	mu       sync.Mutex
	limiters map[*Limiter]struct{}
	closed   atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup

	// beaten, if set, is called by the heartbeat goroutine after each beat
	// with its result: a test hook (see openStore), nil in production.
	beaten func(n int, err error)
}

// ioTimeout bounds a socket read or write of a connection. It is longer than
// the decision budget on purpose: a caller stops waiting after its budget,
// but a reply that arrives a little later still keeps its connection in
// use, instead of tearing it down and reconnecting under load.
// It is at least twice the highest budget the adaptation reaches.
func ioTimeout(budget time.Duration) time.Duration {
	return max(100*time.Millisecond, 20*budget, 2*max(budget, adaptCeil))
}

// quietFor is how long nothing must succeed, after failThreshold failed
// decisions in a row, for the link to go down: ten Timeouts, and at least
// half a second, so that a slow spell of a busy host (whose Redis still
// answers, late: those decisions are bounded by Overshoot) is not taken
// for an outage, whose fallback decides by the node's whole share.
func quietFor(timeout time.Duration) time.Duration { return max(10*timeout, 500*time.Millisecond) }

// reach, while the link is down, dials Redis by itself (within d) and
// tells whether it accepts a connection: the probes of a down link, and the
// heartbeat meanwhile, go to the client only once it does. go-redis counts
// its failed dials over the client's life and, at its pool size (10 a
// core), stops dialling and tries by itself once a second until a dial
// succeeds: an outage of a few seconds under probes once a lease period got
// there, and a node came back up to a second after Redis did. nil while
// the link is up, and with a Cluster or Sentinel (the client picks the
// server to dial; their probes go to it directly).
func (s *Store) reach(d time.Duration) error {
	if !s.link.down.Load() || s.p.Address == "" {
		return nil
	}
	c, err := net.DialTimeout("tcp", s.p.Address, d)
	if err != nil {
		return err
	}
	return c.Close()
}

// Open returns a Store for p. It reads p.PasswordFile,
// p.SentinelPasswordFile and p.CAFile and sets up the connections, which
// are dialled on first use.
func Open(p StoreParams) (*Store, error) { return openStore(p, nil) }

// openStore is Open with a hook the heartbeat goroutine calls after each
// beat, so that a test can wait for a beat; nil: none.
func openStore(p StoreParams, beaten func(n int, err error)) (*Store, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.resolved()
	password, err := secret(p.Password, p.PasswordFile, "the password file")
	if err != nil {
		return nil, err
	}
	sentinelPassword, err := secret(p.SentinelPassword, p.SentinelPasswordFile, "the sentinel password file")
	if err != nil {
		return nil, err
	}
	if p.CAFile != "" {
		b, err := os.ReadFile(p.CAFile)
		if err != nil {
			return nil, fmt.Errorf("limits/redis: reading the CA file: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("limits/redis: no PEM certificate in the CA file %s", p.CAFile)
		}
		p.TLS = p.TLS.Clone()
		p.TLS.RootCAs = roots
	}
	// No retries inside the client: a failed call is answered by the
	// fallback at once, and the store's own backoff decides when to try
	// again (a retried script could also be applied twice).
	io := ioTimeout(p.Timeout)
	var client goredis.UniversalClient
	switch {
	case len(p.ClusterAddresses) > 0:
		client = goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs: p.ClusterAddresses, Username: p.Username, Password: password, TLSConfig: p.TLS,
			DialTimeout: time.Second, DialerRetries: 1, ReadTimeout: io, WriteTimeout: io, MaxRetries: -1,
		})
	case len(p.SentinelAddresses) > 0:
		// One master at a time, so the limiters batch as on one server.
		client = goredis.NewFailoverClient(&goredis.FailoverOptions{
			MasterName: p.MasterName, SentinelAddrs: p.SentinelAddresses, SentinelPassword: sentinelPassword,
			Username: p.Username, Password: password, DB: p.DB, TLSConfig: p.TLS,
			DialTimeout: time.Second, DialerRetries: 1, ReadTimeout: io, WriteTimeout: io, MaxRetries: -1,
		})
	default:
		client = goredis.NewClient(&goredis.Options{
			Addr: p.Address, Username: p.Username, Password: password, DB: p.DB, TLSConfig: p.TLS,
			DialTimeout: time.Second, DialerRetries: 1, ReadTimeout: io, WriteTimeout: io, MaxRetries: -1,
		})
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	host, _ := os.Hostname()
	s := &Store{
		p: p, client: client, clock: scripts, renew: renewals, nodes: nodesScript, batch: len(p.ClusterAddresses) == 0,
		link:     newLink(p.BackoffMin, p.BackoffMax, quietFor(p.Timeout), time.Now().UnixNano()),
		dl:       newDeadline(p.Timeout, time.Now().UnixNano()),
		nodeID:   fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(id[:])),
		nodesKey: p.KeyPrefix + "nodes",
		limiters: make(map[*Limiter]struct{}),
		stop:     make(chan struct{}),
		beaten:   beaten,
	}
	s.divisor.Store(int32(p.Nodes))
	if !s.batch {
		if err := s.autopipeline(); err != nil {
			client.Close()
			return nil, err
		}
	}
	if p.Heartbeat > 0 {
		s.wg.Add(1)
		go s.heartbeat()
	}
	return s, nil
}

// secret is a password given inline or, when file is set, read from file
// (one line; surrounding white space trimmed); what names the file in
// errors.
func secret(inline, file, what string) (string, error) {
	if file == "" {
		return inline, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("limits/redis: reading %s: %w", what, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Close stops the heartbeat (removing this node from the count), and closes
// the connections. Limiters built on the store answer by their fallback
// afterwards. Close is idempotent.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.mu.Lock()
	ls := make([]*Limiter, 0, len(s.limiters))
	for l := range s.limiters {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	close(s.stop)
	s.wg.Wait()
	var err error
	if s.pipe != nil {
		err = s.pipe.Close()
	}
	return errors.Join(err, s.client.Close())
}

// autopipeline sets up the pipe of the limiters that make a script call per
// decision (on a cluster, whose keys a batch could not mix): go-redis's
// auto-pipeliner, which sends the calls of concurrent callers together.
// Its deferred face is used, a Submit then a wait bounded by the decision's
// budget (the blocking face cannot bound its wait); one ordered batch
// stream keeps batches deep, and a bounded queue turns an overload into
// fast errors (answered by the fallback) instead of memory.
func (s *Store) autopipeline() error {
	o := &goredis.AutoPipelineOptions{MaxBatchSize: 300, MaxConcurrentBatches: 1, MaxQueuedCommands: 1 << 16}
	var err error
	switch c := s.client.(type) {
	case *goredis.Client:
		s.pipe, err = c.AsyncAutoPipelineWithOptions(o)
	case *goredis.ClusterClient:
		s.pipe, err = c.AsyncAutoPipelineWithOptions(o)
	}
	if err != nil {
		return fmt.Errorf("limits/redis: %w", err)
	}
	return nil
}

// Status reports the link to Redis and the node count; its decision counts
// are zero (they are per Limiter).
func (s *Store) Status() Status {
	ls := s.link.state()
	st := Status{Mode: ModeRedis, Fallback: s.p.Fallback}
	st.Since, st.LastError = time.Unix(0, ls.since), ls.lastErr
	st.Nodes, st.ObservedNodes = int(s.divisor.Load()), int(s.observed.Load())
	if ls.down {
		st.Mode, st.NextProbe = ModeFallback, time.Unix(0, ls.next)
	}
	if ls.lastErrAt != 0 {
		st.LastErrorAt = time.Unix(0, ls.lastErrAt)
	}
	return st
}

// Changed receives (it is never closed) when the store's Mode has changed,
// at the moment it changes: a caller that logs the changes reads Status on
// each. One value is kept while nobody reads, so a reader may see a change
// that is already undone, and must compare with the mode it saw before.
func (s *Store) Changed() <-chan struct{} { return s.link.changed }

// heartbeat registers this node and refreshes the quotas' definitions every
// p.Heartbeat until Close, then deregisters the node.
func (s *Store) heartbeat() {
	defer s.wg.Done()
	t := time.NewTicker(s.p.Heartbeat)
	defer t.Stop()
	for {
		n, err := 0, s.reach(ioTimeout(s.p.Timeout))
		if err == nil {
			n, err = s.beat(false)
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), ioTimeout(s.p.Timeout))
			_ = s.Refresh(ctx)
			cancel()
		}
		if s.beaten != nil {
			s.beaten(n, err)
		}
		select {
		case <-s.stop:
			if s.reach(ioTimeout(s.p.Timeout)) == nil {
				_, _ = s.beat(true)
			}
			return
		case <-t.C:
		}
	}
}

// beat registers this node (or, with leave, removes it) for three of its
// heartbeats, and updates the node count from the live nodes Redis reports.
func (s *Store) beat(leave bool) (int, error) { return s.beatAt(time.Now(), leave) }

// beatAt is beat; now reaches the script only under the tests' clock
// (argvTime).
func (s *Store) beatAt(now time.Time, leave bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout(s.p.Timeout))
	defer cancel()
	every := s.p.Heartbeat
	if every <= 0 { // no heartbeat goroutine: a beat by hand (tests)
		every = DefaultHeartbeat
	}
	ttl := 3 * every.Milliseconds()
	flag := "0"
	if leave {
		flag = "1"
	}
	keys, args := []string{s.nodesKey}, []any{s.nodeID, ttl, flag}
	if s.argvTime {
		args = append(args, now.Unix(), int64(now.Nanosecond()))
	}
	n, err := s.client.EvalSha(ctx, s.nodes.sha, keys, args...).Int()
	if isNoScript(err) {
		n, err = s.client.Eval(ctx, s.nodes.src, keys, args...).Int()
	}
	if err != nil {
		return 0, err
	}
	if !leave {
		s.observed.Store(int32(n))
		s.reshare()
	}
	return n, nil
}

// reshare recomputes the node count and, if it changed, every limiter's
// local share of its quota.
func (s *Store) reshare() {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := max(int32(s.p.Nodes), s.observed.Load())
	if s.divisor.Swap(d) == d {
		return
	}
	for l := range s.limiters {
		l.share(int(d))
	}
}

func (s *Store) register(l *Limiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limiters[l] = struct{}{}
	l.share(int(s.divisor.Load()))
}

func (s *Store) unregister(l *Limiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.limiters, l)
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
