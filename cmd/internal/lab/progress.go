package lab

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/load"
)

// progress shows how far the runs are and how long is left: a bar redrawn
// in place on a terminal, a plain line every plainEvery otherwise.
type progress struct {
	w          io.Writer // nil: silent
	prefix     string    // starts every plain line, e.g. "sluice-lab: "
	tty        bool
	total      time.Duration // load time of every planned run
	done       time.Duration // load time of the finished runs
	lastPlain  time.Time
	plainEvery time.Duration
}

const barWidth = 30

func (p *progress) update(label string, elapsed, length time.Duration, live load.Live) {
	if p.w == nil {
		return
	}
	elapsed = min(elapsed, length)
	left := max(p.total-p.done-elapsed, 0)
	frac := 1.0
	if p.total > 0 {
		frac = float64(p.done+elapsed) / float64(p.total)
	}
	counts := fmt.Sprintf("ok %d, rejected %d, errors %d, in flight %d", live.OK, live.Rejected, live.Errors, live.Inflight)
	if p.tty {
		counts = fmt.Sprintf("ok %d rej %d err %d", live.OK, live.Rejected, live.Errors)
	}
	if p.tty {
		n := int(frac * barWidth)
		bar := strings.Repeat("=", n) + strings.Repeat(" ", barWidth-n)
		fmt.Fprintf(p.w, "\r\033[K[%s] %3.0f%% %s %s/%s, %s left; %s", bar, 100*frac, label,
			round(elapsed), round(length), round(left), counts)
		return
	}
	now := time.Now()
	if now.Sub(p.lastPlain) < p.plainEvery {
		return
	}
	p.lastPlain = now
	fmt.Fprintf(p.w, "%s%s %s/%s, %.0f%% of all, %s left; %s\n", p.prefix, label, round(elapsed), round(length), 100*frac, round(left), counts)
}

// finish closes a run's progress with a one-line summary.
func (p *progress) finish(length time.Duration, line string) {
	p.done += length
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "%s%s\n", p.prefix, line)
	p.lastPlain = time.Time{}
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }
