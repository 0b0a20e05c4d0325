package report

import (
	"math"
)

// GoodputPanel plots each contender's goodput against the offered load,
// one point per phase, over the ideal min(offered, C).
func GoodputPanel(runs []Run) Panel {
	p := Panel{Title: "goodput (req/s within the SLO) vs offered load, one point per phase", XLabel: "offered req/s"}
	var maxX float64
	for i, r := range runs {
		s := Series{Name: r.Contender, Color: Palette[i%len(Palette)], Marks: true}
		for _, ph := range r.Load.Phases {
			secs := ph.For.Seconds()
			x := float64(ph.Offered) / secs
			s.X = append(s.X, x)
			s.Y = append(s.Y, float64(ph.Good)/secs)
			maxX = math.Max(maxX, x)
		}
		sortXY(&s)
		p.Series = append(p.Series, s)
	}
	if len(runs) > 0 {
		c := runs[0].Capacity
		p.Series = append(p.Series, Series{Name: "ideal min(offered, C)", Color: Palette[7], Dashed: true,
			X: []float64{0, c, math.Max(maxX, c)}, Y: []float64{0, c, c}})
	}
	return p
}

// sortXY orders a series' points by x, so a sweep draws left to right.
func sortXY(s *Series) {
	for i := 1; i < len(s.X); i++ {
		for j := i; j > 0 && s.X[j] < s.X[j-1]; j-- {
			s.X[j], s.X[j-1] = s.X[j-1], s.X[j]
			s.Y[j], s.Y[j-1] = s.Y[j-1], s.Y[j]
		}
	}
}

// TimelinePanels plots one run over time: the rates, the concurrency
// (limit, in-flight, the backend's queue) and the admitted p99.
func TimelinePanels(r Run) []Panel {
	var t, offered, good, rejected, errs, p99, capacity []float64
	for _, s := range r.Load.Seconds {
		x := float64(s.T) + 0.5
		t = append(t, x)
		offered = append(offered, float64(s.Offered))
		good = append(good, float64(s.Good))
		rejected = append(rejected, float64(s.Rejected))
		errs = append(errs, float64(s.Errors))
		if s.OK > 0 {
			p99 = append(p99, s.P99)
		} else {
			p99 = append(p99, math.NaN())
		}
	}
	var st, limit, inflight, backendIn, queued []float64
	for _, s := range r.Samples {
		st = append(st, s.T)
		limit = append(limit, deref(s.Limit))
		inflight = append(inflight, deref(s.Inflight))
		if b := s.Backend; b != nil {
			backendIn = append(backendIn, float64(b.InService))
			queued = append(queued, float64(b.Queued))
			capacity = append(capacity, b.Capacity)
		} else {
			backendIn = append(backendIn, math.NaN())
			queued = append(queued, math.NaN())
			capacity = append(capacity, math.NaN())
		}
	}
	rates := Panel{Title: r.Contender + ": requests per second (by intended send second)", XLabel: "seconds", Series: []Series{
		{Name: "offered", X: t, Y: offered, Color: Palette[7]},
		{Name: "goodput", X: t, Y: good, Color: Palette[2]},
		{Name: "rejected", X: t, Y: rejected, Color: Palette[3]},
		{Name: "errors", X: t, Y: errs, Color: Palette[1]},
		{Name: "backend C", X: st, Y: capacity, Color: Palette[0], Dashed: true},
	}}
	conc := Panel{Title: "concurrency: limit, in flight, backend in service and queued", XLabel: "seconds", Series: []Series{
		{Name: "backend in service", X: st, Y: backendIn, Color: Palette[2]},
		{Name: "backend queued", X: st, Y: queued, Color: Palette[3]},
	}}
	if anyNumber(limit) {
		conc.Series = append(conc.Series, Series{Name: "limit", X: st, Y: limit, Color: Palette[0]})
	}
	if anyNumber(inflight) {
		conc.Series = append(conc.Series, Series{Name: "in flight (proxy)", X: st, Y: inflight, Color: Palette[4]})
	}
	slo := float64(r.SLO.Microseconds()) / 1000
	lat := Panel{Title: "admitted p99 latency (ms) per second", XLabel: "seconds",
		Series: []Series{{Name: "p99", X: t, Y: p99, Color: Palette[1]}},
		HLines: []HLine{{Y: slo, Label: "SLO", Color: Palette[7]}},
	}
	panels := []Panel{rates, conc, lat}
	end := r.Schedule.Duration().Seconds()
	if n := len(t); n > 0 {
		end = math.Max(end, t[n-1]+0.5)
	}
	if n := len(st); n > 0 {
		end = math.Max(end, st[n-1])
	}
	for i := range panels {
		panels[i].XMin, panels[i].XMax = 0, math.Ceil(end)
	}
	return panels
}

func deref(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func anyNumber(xs []float64) bool {
	for _, x := range xs {
		if !math.IsNaN(x) {
			return true
		}
	}
	return false
}
