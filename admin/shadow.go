package admin

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
)

// shadowView is a group's mode and shadow read-out for the API.
func shadowView(s *gate.ShadowStatus) (spec.Mode, api.Shadow) {
	v := api.Shadow{RateMode: s.RateMode, WouldQueue: s.Queued, Beyond: s.Beyond,
		ByReason: make(map[string]uint64, adaptive.NumRejections-1), RejectedKeys: rejectedKeysView(s.RejectedKeys)}
	for r := 1; r < adaptive.NumRejections; r++ {
		v.ByReason[adaptive.RejectReason(r).String()] = s.Rejected[r]
		v.WouldReject += s.Rejected[r]
	}
	v.Line = shadowLine(s.Mode, &v)
	return s.Mode, v
}

// collectShadow adds a group's would-be decisions to sluice_decisions_total:
// decision "shadow_rejected" by reason, and "shadow_queued". The requests
// they count were admitted, and count under "admitted" too when done.
func collectShadow(counter func(*prometheus.Desc, float64, ...string), g *gate.GroupStatus) {
	for r := 1; r < adaptive.NumRejections; r++ {
		counter(descDecisions, float64(g.Shadow.Rejected[r]), g.Name, "shadow_rejected", "", adaptive.RejectReason(r).String())
	}
	counter(descDecisions, float64(g.Shadow.Queued), g.Name, "shadow_queued", "", "")
}

// shadowLine says what a group's shadow mode would have refused (api.Shadow's
// Line): "" for a group that enforces everything and has counted nothing.
func shadowLine(mode spec.Mode, s *api.Shadow) string {
	var who string
	switch {
	case mode == spec.ModeShadow:
		who = "shadow mode: admitting every request"
	case s.RateMode == spec.ModeShadow:
		who = "rate rule in shadow mode: admitting what it refuses"
	case s.WouldReject == 0 && s.WouldQueue == 0:
		return ""
	default:
		who = "was in shadow mode"
	}
	var parts []string
	for r := 1; r < adaptive.NumRejections; r++ {
		why := adaptive.RejectReason(r).String()
		if n := s.ByReason[why]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, why))
		}
	}
	line := who + "; would have refused "
	if len(parts) == 0 {
		line += "none"
	} else {
		line += strings.Join(parts, ", ")
	}
	if s.WouldQueue > 0 {
		line += fmt.Sprintf(" and queued %d", s.WouldQueue)
	}
	return line
}
