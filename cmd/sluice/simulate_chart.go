//go:build !nodemo

package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/report"
)

// drawSimulated renders, per group, the rates, the concurrency and the
// latency of its run over time, one control interval a point, with the
// lab's plotter (the same panels as its timelines).
func drawSimulated(w io.Writer, results []simulated) error {
	var panels []report.Panel
	for _, res := range results {
		r := res.report
		// Rates per second, as the lab plots them; the rest per interval.
		var t, sent, good, rejected, st, limit, inflight, queue, p99 []float64
		perSec := max(1, int(time.Second/r.Interval))
		secs := float64(perSec) * r.Interval.Seconds()
		for i := 0; i+perSec <= len(r.Series); i += perSec {
			var a, g, rj int
			for _, p := range r.Series[i : i+perSec] {
				a, g, rj = a+p.Attempts, g+p.Good, rj+p.Rejects
			}
			t = append(t, (r.Series[i+perSec-1].T - r.Interval*time.Duration(perSec)/2).Seconds())
			sent, good, rejected = append(sent, float64(a)/secs), append(good, float64(g)/secs), append(rejected, float64(rj)/secs)
		}
		for _, p := range r.Series {
			st = append(st, p.T.Seconds())
			limit = append(limit, float64(p.Limit))
			inflight = append(inflight, float64(p.MaxInFlight))
			queue = append(queue, float64(p.Queue))
			if p.P99 > 0 {
				p99 = append(p99, float64(p.P99.Microseconds())/1000)
			} else {
				p99 = append(p99, math.NaN())
			}
		}
		name := fmt.Sprintf("group %q", res.group.Name)
		end := res.run.Scenario.Duration.Seconds()
		capacity := []float64{r.Capacity, r.Capacity}
		group := []report.Panel{
			{Title: name + ": requests per second (simulated, per second)", XLabel: "seconds", Series: []report.Series{
				{Name: "sent", X: t, Y: sent, Color: report.Palette[7]},
				{Name: "goodput", X: t, Y: good, Color: report.Palette[2]},
				{Name: "rejected", X: t, Y: rejected, Color: report.Palette[3]},
				{Name: "C at the start", X: []float64{0, end}, Y: capacity, Color: report.Palette[0], Dashed: true},
			}},
			{Title: name + ": concurrency limit, most in flight, queue", XLabel: "seconds", Series: []report.Series{
				{Name: "limit", X: st, Y: limit, Color: report.Palette[0]},
				{Name: "max in flight", X: st, Y: inflight, Color: report.Palette[4]},
				{Name: "queue", X: st, Y: queue, Color: report.Palette[3]},
			}},
			{Title: name + ": upstream p99 latency (ms) per interval", XLabel: "seconds",
				Series: []report.Series{{Name: "p99", X: st, Y: p99, Color: report.Palette[1]}},
				HLines: []report.HLine{{Y: float64(r.SLO.Microseconds()) / 1000, Label: "SLO", Color: report.Palette[7]}}},
		}
		for i := range group {
			group[i].XMin, group[i].XMax = 0, math.Ceil(end)
		}
		panels = append(panels, group...)
	}
	return report.WritePNG(w, 960, 240, panels)
}
