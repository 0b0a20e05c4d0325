package permit

import (
	"time"

	"github.com/sluicehq/sluice/adaptive"
)

// Stats is the service's read-out, for the admin API and the metrics: a
// copy, owned by the caller. Counts are cumulative since New.
type Stats struct {
	// Live is the number of permits held now; Capacity the lease table's
	// bound (Params.MaxLeases).
	Live, Capacity int
	// Full counts requests refused because the lease table was full.
	Full uint64
	// Groups holds the groups that had a permit request, by name.
	Groups []GroupStats
}

// GroupStats are one group's counts.
type GroupStats struct {
	Name string
	// Lease is the lease a permit of the group gets now.
	Lease time.Duration
	// Granted counts permits granted; Refused the refusals by reason
	// (indexed by adaptive.RejectReason); Canceled the requests whose caller
	// went away while they waited.
	Granted  uint64
	Refused  [adaptive.NumRejections]uint64
	Canceled uint64
	// Released counts releases in time, by outcome (indexed by
	// gate.Outcome); Expired the leases that expired unreleased (each
	// reported to the gate as ignored: no signal to the law); Late the releases that came after
	// their lease had expired (they freed nothing).
	Released [3]uint64
	Expired  uint64
	Late     uint64
}

// Stats returns the service's read-out.
func (s *Service) Stats() Stats {
	st := Stats{Live: s.table.liveCount(), Capacity: s.table.cap, Full: s.full.Load()}
	for _, e := range s.groups.all() {
		g := GroupStats{Name: e.name, Lease: time.Duration(e.lease.Load()), Granted: e.granted.Load(),
			Canceled: e.canceled.Load(), Expired: e.expired.Load(), Late: e.late.Load()}
		for i := range g.Refused {
			g.Refused[i] = e.refused[i].Load()
		}
		for o := range g.Released {
			g.Released[o] = e.released[o].Load()
		}
		st.Groups = append(st.Groups, g)
	}
	return st
}
