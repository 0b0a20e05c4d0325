package adaptive

// FairShare decides, when a group is at its limit, which keys (tenants, clients)
// give way first without any configured quota: a key already holding its fair
// share of the slots, limit / active keys × (1 + Slack), is turned away
// (RejectFairShare) instead of queueing, so the next free slots go to keys
// holding less and one greedy key cannot starve polite ones. Below the limit
// every key may take a slot (work conserving).
//
// The zero value is ready to use; FairShare is stateless and safe for concurrent
// use.
type FairShare struct {
	// Slack lets a key hold up to (1 + Slack) × its share; default 0.
	Slack float64
}

// Share returns a key's fair share of limit slots among activeKeys keys.
func (f FairShare) Share(limit, activeKeys int) float64 {
	return float64(limit) / float64(max(1, activeKeys)) * (1 + max(0, f.Slack))
}

// Allow reports whether a key holding keyInFlight slots may take (or queue for)
// one more, in a group holding groupInFlight of limit slots, with activeKeys keys
// active (holding slots or queued, the asking key included).
func (f FairShare) Allow(keyInFlight, groupInFlight, limit, activeKeys int) bool {
	if groupInFlight < limit || activeKeys <= 1 {
		return true
	}
	return float64(keyInFlight) < f.Share(limit, activeKeys)
}
