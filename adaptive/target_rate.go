package adaptive

// RateParams configures the token rate Target manages beside the limit.
type RateParams struct {
	// Initial is the rate in requests per second before the first cut; > 0
	// enables rate management. Restart from a saved rate by setting it here.
	Initial float64
	// Min and Max bound the rate; defaults 1 req/s and unbounded (0).
	Min, Max float64
	// Headroom is how far above the admitted throughput the rate is set when a
	// target is exceeded, in [0, 1); default 0.1.
	Headroom float64
}

// updateRate moves the managed token rate (see Target).
func (t *Target) updateRate(s *Sample, pr *proposal, n float64, acted bool) {
	if t.p.Rate.Initial == 0 {
		return
	}
	r := t.rate
	switch {
	case pr.violated:
		if acted && finite(pr.rateCut) && pr.rateCut > 0 {
			r = min(r, pr.rateCut*(1+t.p.Rate.Headroom))
		}
	case s.RateRejected > 0 && finite(pr.want) && n > 0:
		grow := 1 + t.p.Gain*(pr.want/n-1)
		r *= min(1.25, max(1, grow))
	}
	t.rate = min(max(r, t.p.Rate.Min), t.p.Rate.Max)
}
