package probe

import "time"

// warmingUp is the reason a rate is unknown at its first reading.
const warmingUp = "warming up: CPU utilisation needs a second sample"

// rate is a counter and the time it was read, to turn into a rate at the
// next reading.
type rate struct {
	ok    bool
	at    time.Time
	value float64
}

// since records value read at now and returns how much it and time grew
// since the previous reading, with a reason when no rate can be had yet.
func (r *rate) since(now time.Time, value float64) (dv float64, dt time.Duration, reason string) {
	prev := *r
	*r = rate{ok: true, at: now, value: value}
	switch {
	case !prev.ok:
		return 0, 0, warmingUp
	case !now.After(prev.at):
		return 0, 0, "no time elapsed since the previous sample"
	case value < prev.value:
		return 0, 0, "counter went backwards (restarted?); starting again"
	}
	return value - prev.value, now.Sub(prev.at), ""
}
