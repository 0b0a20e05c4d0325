package redis

import (
	"testing"

	"github.com/sluicehq/sluice/limits"
)

// TestRegistryGlobal ties what the registry of rate algorithms says about
// Redis (limits.Algorithm.Global) to the scripts this package has.
func TestRegistryGlobal(t *testing.T) {
	for _, a := range limits.Algorithms() {
		name := Algorithm(a.Name)
		_, exact := scripts[name]
		_, leased := renewals[name]
		_, tagged := keyTag[name]
		if exact != (a.Global != limits.GlobalNone) || tagged != exact || leased != (a.Global == limits.GlobalLeased) {
			t.Errorf("%s: Global %d, but scripts %v, key tag %v, renewals %v", a.Name, a.Global, exact, tagged, leased)
		}
		if Leasable(name) != leased {
			t.Errorf("%s: Leasable %v, renewals %v", a.Name, Leasable(name), leased)
		}
		if exact && a.Shape == limits.ShapeWindow && a.GlobalMaxLimit <= 0 {
			t.Errorf("%s: a global window needs GlobalMaxLimit", a.Name)
		}
	}
	for _, a := range []Algorithm{TokenBucket, LeakyBucket, FixedWindow, SlidingWindow} {
		if _, ok := algorithm(a); !ok {
			t.Errorf("%s: not in the registry as global", a)
		}
	}
}
