package sim

import (
	"time"

	"github.com/sluicehq/sluice/internal/hist"
)

// Sent sums up the attempts that arrived at the gate in a stretch of the
// run, whenever they ended: the lab's way of counting (its load generator
// files each arrival under its intended send instant, cmd/internal/lab/load),
// where PhaseReport's figures are by the instant each attempt ended.
// Latencies are end to end from the attempt's arrival (a retry is an
// attempt of its own).
type Sent struct {
	From, To time.Duration
	Attempts int // attempts that arrived in [From, To)
	OK       int // of them, those that succeeded
	Good     int // succeeded within the SLO
	Rejected int // turned away by the gate (or the breaker)
	Dropped  int // given up by their client, or failed by an outage
	P50, P99 time.Duration
}

// Goodput is Good per second of the stretch.
func (s Sent) Goodput() float64 {
	if s.To <= s.From {
		return 0
	}
	return float64(s.Good) / (s.To - s.From).Seconds()
}

// sentRing is how many seconds' latency histograms the recorder keeps at
// once, at most: an attempt ends at the latest when its client gives up,
// so a second is complete Clients.Timeout (+ 2 s of rounding) after it
// ends. With a longer timeout, a success later than this ring reaches is
// counted in its second but not in its quantiles.
const maxSentRing = 64

// sentBook files attempts by the second and the phase they arrived in.
type sentBook struct {
	phases  []Sent
	phaseAt []time.Duration // each phase's start, ascending
	pLat    []*hist.Histogram
	seconds []Sent
	ring    []*hist.Histogram // latencies of second ringSec[i] % len(ring)
	ringSec []int
}

func (b *sentBook) init(sc *Scenario, phases []phaseAcc) {
	for _, p := range phases {
		b.phases = append(b.phases, Sent{From: p.start, To: p.end})
		b.phaseAt = append(b.phaseAt, p.start)
		b.pLat = append(b.pLat, new(hist.Histogram))
	}
	n := int((sc.Duration + time.Second - 1) / time.Second)
	b.seconds = make([]Sent, n)
	for i := range b.seconds {
		b.seconds[i] = Sent{From: time.Duration(i) * time.Second, To: min(time.Duration(i+1)*time.Second, sc.Duration)}
	}
	r := min(maxSentRing, int(sc.Clients.Timeout/time.Second)+3, max(n, 1))
	b.ring = make([]*hist.Histogram, r)
	b.ringSec = make([]int, r)
	for i := range b.ring {
		b.ring[i], b.ringSec[i] = new(hist.Histogram), -1
	}
}

// at returns the phase and second an attempt that arrived at arrive is
// filed under; sec is -1 past the run's end.
func (b *sentBook) at(arrive int64) (phase, sec int) {
	for phase = len(b.phaseAt) - 1; phase > 0 && time.Duration(arrive) < b.phaseAt[phase]; phase-- {
	}
	sec = int(arrive / int64(time.Second))
	if sec >= len(b.seconds) {
		sec = -1
	}
	return phase, sec
}

func (b *sentBook) attempt(arrive int64) {
	p, s := b.at(arrive)
	b.phases[p].Attempts++
	if s >= 0 {
		b.seconds[s].Attempts++
	}
}

func (b *sentBook) rejected(arrive int64) {
	p, s := b.at(arrive)
	b.phases[p].Rejected++
	if s >= 0 {
		b.seconds[s].Rejected++
	}
}

func (b *sentBook) dropped(arrive int64) {
	p, s := b.at(arrive)
	b.phases[p].Dropped++
	if s >= 0 {
		b.seconds[s].Dropped++
	}
}

func (b *sentBook) succeeded(arrive, e2e int64, good bool) {
	p, s := b.at(arrive)
	g := 0
	if good {
		g = 1
	}
	b.phases[p].OK++
	b.phases[p].Good += g
	b.pLat[p].Add(time.Duration(e2e))
	if s < 0 {
		return
	}
	b.seconds[s].OK++
	b.seconds[s].Good += g
	i := s % len(b.ring)
	switch {
	case b.ringSec[i] == s:
	case b.ringSec[i] > s: // the ring has moved past it
		return
	default:
		b.close(i)
		b.ringSec[i] = s
	}
	b.ring[i].Add(time.Duration(e2e))
}

// close writes the quantiles of ring slot i into its second and empties it.
func (b *sentBook) close(i int) {
	if s := b.ringSec[i]; s >= 0 {
		b.seconds[s].P50, b.seconds[s].P99 = b.ring[i].Quantile(0.5), b.ring[i].Quantile(0.99)
		b.ring[i].Reset()
		b.ringSec[i] = -1
	}
}

// finish closes every second still open and the phases' quantiles.
func (b *sentBook) finish() {
	for i := range b.ring {
		b.close(i)
	}
	for p := range b.phases {
		b.phases[p].P50, b.phases[p].P99 = b.pLat[p].Quantile(0.5), b.pLat[p].Quantile(0.99)
	}
}
