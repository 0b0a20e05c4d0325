package rls

import (
	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/limits"
)

// Gate is what the rate limit service needs of sluice's admission
// pipeline, *gate.Gate's methods by name and meaning:
//
//   - ClassOf builds the class of a descriptor (group by name, key);
//   - AllowRate decides a class against its group's rate stage only (no
//     floor, no fair share, no concurrency slot: Envoy's protocol has no
//     release), spending cost units (0: the group's configured rate.cost).
//     It returns the rate limiter's decision and its policy whether the
//     request is allowed or not (zero values for a group without a rate
//     limit, which allows everything) and, when it is not, the Rejection
//     (reason rate), counted in the group as the proxy's are.
//
// *gate.Gate is the implementation; implementations must be safe for
// concurrent use.
type Gate interface {
	ClassOf(group, key string, p adaptive.Priority) (gate.Class, bool)
	AllowRate(c gate.Class, cost int64) (res limits.Result, pol limits.Policy, rej gate.Rejection, ok bool)
}
