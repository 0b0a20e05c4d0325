package permit

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
)

// Gate is what the permit service needs of sluice's admission pipeline,
// *gate.Gate's methods by name and meaning:
//
//   - ClassOf builds the class of a permit request (group by name, key,
//     priority);
//   - EnterClassCost runs it through the group's pipeline as EnterClass
//     does, with the rate stage spending cost units instead of the group's
//     configured rate.cost (cost 0: the configured cost) while the
//     concurrency stage takes one slot, whatever the cost;
//   - Reject counts a refusal decided here (a full lease table) in the
//     group, as the proxy's circuit breaker does;
//   - CorrectCost charges the rate stage the difference between what a
//     grant spent and the real cost its release declares.
//
// *gate.Gate is the implementation; implementations must be safe for
// concurrent use.
type Gate interface {
	ClassOf(group, key string, p adaptive.Priority) (gate.Class, bool)
	EnterClassCost(ctx context.Context, c gate.Class, cost int64) (gate.Pass, gate.Rejection, bool)
	Reject(c gate.Class, why adaptive.RejectReason, retryAfter time.Duration) gate.Rejection
	CorrectCost(c gate.Class, charged, actual int64) bool
}

// Clock tells the service the time: lease grants and expiry. gate.Clock
// values fit. Tests inject one to expire leases at chosen instants.
type Clock interface {
	Now() time.Time
}
