// Package pause models a service that stops now and then — a
// stop-the-world collection, a stalled disk, a process held by SIGSTOP:
// periodic pauses during which no work makes progress, and when work that
// starts at a given instant ends under them. The lab's backend
// (cmd/internal/lab/backend) and the simulator's model backend (adaptive/sim)
// both stall through it, so that a scenario stalls the same way in each.
//
// Instants are offsets from the start of a schedule (the backend's start or
// reset, the simulation's time zero). Everything here is a pure function
// of its arguments and safe for concurrent use.
package pause

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Periodic is a pause of For at From, From+Every, From+2·Every, …: the k-th
// pause spans [From + k·Every, From + k·Every + For). The zero value never
// pauses.
type Periodic struct {
	For   time.Duration `json:"for,omitempty"`   // length of each pause; zero: none
	Every time.Duration `json:"every,omitempty"` // from the start of one pause to the next
	From  time.Duration `json:"from,omitempty"`  // start of the first pause
}

// On reports whether p pauses at all.
func (p Periodic) On() bool { return p.For > 0 }

// Validate reports the first problem with p.
func (p Periodic) Validate() error {
	if msg := p.problem(); msg != "" {
		return errors.New("pause: " + msg)
	}
	return nil
}

func (p Periodic) problem() string {
	switch {
	case p == Periodic{}:
		return ""
	case p.For <= 0:
		return fmt.Sprintf("for %v must be positive", p.For)
	case p.Every <= p.For:
		return fmt.Sprintf("every %v must be longer than for %v", p.Every, p.For)
	case p.From < 0:
		return fmt.Sprintf("from %v must not be negative", p.From)
	}
	return ""
}

// Share is the fraction of time paused once the pauses have begun.
func (p Periodic) Share() float64 {
	if !p.On() {
		return 0
	}
	return float64(p.For) / float64(p.Every)
}

// Active is the time in [0, t) that is not paused.
func (p Periodic) Active(t time.Duration) time.Duration {
	if !p.On() || t <= p.From {
		return t
	}
	since := t - p.From
	k, r := since/p.Every, since%p.Every
	return t - k*p.For - min(r, p.For)
}

// At is the earliest instant by which a time of active (unpaused) time
// has passed since 0: the inverse of Active.
func (p Periodic) At(active time.Duration) time.Duration {
	if !p.On() || active <= p.From {
		return active
	}
	run := p.Every - p.For // unpaused time per period
	since := active - p.From
	k, r := since/run, since%run
	if r == 0 { // reached as the k-th pause begins
		return p.From + k*p.Every
	}
	return p.From + k*p.Every + p.For + r
}

// End is when work needing the given unpaused time ends if it starts at
// start: work stopped by a pause resumes where it was when the pause ends.
func (p Periodic) End(start, work time.Duration) time.Duration {
	if !p.On() {
		return start + work
	}
	return max(start, p.At(p.Active(start)+work))
}

// Until returns, for an instant t inside a pause, the instant the pause
// ends, and false outside any pause.
func (p Periodic) Until(t time.Duration) (time.Duration, bool) {
	if !p.On() || t < p.From {
		return 0, false
	}
	since := t - p.From
	if r := since % p.Every; r < p.For {
		return t - r + p.For, true
	}
	return 0, false
}

// String returns the form Parse reads, "" for the zero value.
func (p Periodic) String() string {
	if p == (Periodic{}) {
		return ""
	}
	return fmt.Sprintf("for=%v,every=%v,from=%v", p.For, p.Every, p.From)
}

// Parse reads "for=D,every=D[,from=D]"; from defaults to every (the first
// pause one period in). "" is no pause.
func Parse(s string) (Periodic, error) {
	var p Periodic
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	from := false
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return Periodic{}, fmt.Errorf("pause: %q: %s: %v", s, strings.TrimSpace(k), err)
		}
		switch strings.TrimSpace(k) {
		case "for":
			p.For = d
		case "every":
			p.Every = d
		case "from":
			p.From, from = d, true
		default:
			return Periodic{}, fmt.Errorf("pause: %q: unknown key %q (want for, every, from)", s, strings.TrimSpace(k))
		}
	}
	if !from {
		p.From = p.Every
	}
	if msg := p.problem(); msg != "" {
		return Periodic{}, fmt.Errorf("pause: %q: %s", s, msg)
	}
	return p, nil
}
