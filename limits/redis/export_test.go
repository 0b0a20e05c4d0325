package redis

// testClock replaces the production clock (lua/clock.lua) in the tests that
// decide at fixed instants: the time is the last two arguments, which only
// a store opened by openAtCallerTime sends. Keys live 1000 times longer in
// real time than the script's schedule asks, so a test's fixed instants
// never see a key expire under them while the test runs.
const testClock = `local sec, nsec, ttl_scale = tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV]), 1000
`

var (
	callerTimeScripts  = limiterScripts(testClock)
	callerTimeRenewals = renewalScripts(testClock)
	callerTimeNodes    = newScript(testClock, file("nodes.lua"))
)

// openAtCallerTime opens a store whose scripts decide at the now passed to
// AllowAt instead of Redis's TIME. It exists only in the test binary.
func openAtCallerTime(p StoreParams) (*Store, error) {
	s, err := Open(p)
	if err != nil {
		return nil, err
	}
	// One instant per script call: no batches of several callers.
	s.clock, s.renew, s.nodes, s.argvTime = callerTimeScripts, callerTimeRenewals, callerTimeNodes, true
	return s, s.unbatched()
}

// unbatched makes the store's later limiters decide with a script call per
// decision, through the auto-pipeliner, as on a cluster.
func (s *Store) unbatched() error {
	if !s.batch {
		return nil
	}
	s.batch = false
	return s.autopipeline()
}

// rounds returns a channel that receives (without blocking the renewer)
// after each of l's renewal rounds.
func (l *Limiter) rounds() <-chan struct{} {
	ch := make(chan struct{}, 1)
	f := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	l.lease.rounded.Store(&f)
	return ch
}

// abandon stops l's renewals without giving anything back, as a node
// killed with SIGKILL does; its units stay counted until its leases expire.
func (l *Limiter) abandon() { l.lease.close(false) }
