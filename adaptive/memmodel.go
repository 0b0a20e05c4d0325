package adaptive

// memForget is the per-interval forgetting factor of memModel: a sample's weight
// halves in about 35 intervals (9 s at 250 ms).
const memForget = 0.98

// memModel fits memory utilisation as a linear function of the work the gate
// holds (requests in flight plus waiters), m ≈ base + perRequest × held, by least
// squares with exponential forgetting. It treats a waiter like a request in
// flight, which overstates the memory of a full queue when waiters are cheaper:
// the error is on the safe side.
type memModel struct {
	n, sx, sy, sxx, sxy float64
}

// add folds in one observation.
func (m *memModel) add(held, mem float64) {
	m.n = m.n*memForget + 1
	m.sx = m.sx*memForget + held
	m.sy = m.sy*memForget + mem
	m.sxx = m.sxx*memForget + held*held
	m.sxy = m.sxy*memForget + held*mem
}

// memWarmup is how many observations the fit needs before it is trusted.
const memWarmup = 8

// fit returns base and perRequest. ok is false until memWarmup observations
// spread over at least a couple of requests are in; rising is false when memory
// does not rise with held work (a fitted slope of zero or less).
func (m *memModel) fit() (base, perRequest float64, ok, rising bool) {
	if m.n < memWarmup {
		return 0, 0, false, true
	}
	mx, my := m.sx/m.n, m.sy/m.n
	vx := m.sxx/m.n - mx*mx
	if vx < 1 {
		return 0, 0, false, true
	}
	perRequest = (m.sxy/m.n - mx*my) / vx
	base = my - perRequest*mx
	if !finite(perRequest) || !finite(base) {
		return 0, 0, false, true
	}
	return base, perRequest, perRequest > 0, perRequest > 0
}

// budget returns the limit at which a full queue plus limit requests in flight
// would use aim of memory, and the memory that limit would use. While the fit is
// not usable it assumes all of the memory now in use (mem, with held requests
// held) is per-request memory, which overstates the cost of a request: the
// error is again on the safe side. It reports false when memory does not rise
// with held work (then no budget can be drawn) or nothing is held yet.
func (m *memModel) budget(aim, mem, held float64, limit, queueCap int) (slots, projected float64, ok bool) {
	base, per, ok, rising := m.fit()
	if !rising {
		return 0, 0, false
	}
	if !ok {
		if held < 1 || !(mem > 0) {
			return 0, 0, false
		}
		base, per = 0, mem/held
	}
	slots = (aim-base)/per - float64(queueCap)
	projected = base + per*float64(limit+queueCap)
	return slots, max(projected, 0), true
}
