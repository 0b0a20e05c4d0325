// Package conformance reads the admission traces of testdata/conformance:
// requests arriving and finishing at given instants, control ticks, and the
// decisions expected of them. The real gate (gate/conformance_test.go, on an
// injected clock) and the simulator's gate model (adaptive/sim's
// conformance_test.go, in virtual time) run every trace and must both produce
// its expected decisions, so the two admission pipelines cannot drift apart
// silently. The gate is the truth: its test rewrites the expectations with
// -rewrite. This package holds the format and the log both runners write;
// it imports nothing of sluice's, so neither test imports the other's
// package. The traces avoid a leaky_queue rate (its pacing waits on real
// timers) and keep wait bounds of seconds: the gate's runner ends waits
// through the request's context at the instant the gate's bound says, while
// limits.Concurrency's own timer, which is real, stays far away.
//
// # Format
//
// A trace is a text file, "#" starting a comment line:
//
//	# What the trace shows (the leading comment block is its description).
//	sim: skip the reason the simulator does not model this trace
//	config
//	[[group]]
//	name = "api"
//	...
//	steps
//	0s      arrive a priority=critical key=alice cost=1 group=api
//	0s      > admit a
//	1ms     arrive b
//	1ms     > queue b
//	2ms     done a success
//	2ms     > admit b
//	250ms   tick
//	250ms   > limit api 2
//
// The config block is the TOML of the groups, as the daemon reads it (an
// upstream is added by the gate's test). Steps are inputs, one a line with
// its instant since the start (a Go duration, non-decreasing):
//
//   - arrive NAME [priority=P] [key=K] [cost=N] [group=G]: a request named
//     NAME enters group G (default: the first group) with priority P
//     (sheddable, default, critical; default "default"), key K (default "")
//     and rate cost N (default 0: the group's rate.cost);
//   - done NAME OUTCOME: admitted request NAME finishes (success, dropped or
//     ignored); its upstream latency is the time since it got its slot;
//   - tick: a control interval ends;
//   - advance: time passes to the instant (so that waits ending by then end).
//
// Lines starting with ">" after the instant are the expected outcomes, in
// order: "admit NAME", "queue NAME" (it waits for a slot), "reject NAME
// REASON" (an adaptive rejection reason such as queue_full), and after a
// tick, for every group in order, "limit GROUP N", "rate GROUP R" (tokens
// per second to six digits, when the law manages the group's token rate) and
// "floor GROUP PRIORITY REASON" (when the floor is above sheddable: requests
// below PRIORITY are refused for REASON). Each action's own outcome comes
// first (an arrival's decision, a tick's figures), then what it did to other
// requests (a waiter admitted by a release, evicted by a newcomer) in order
// of their names. A waiter whose wait bound ends at or before a step's
// instant is refused before that step runs, at the instant its bound ends.
package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Trace is one parsed trace file.
type Trace struct {
	// Name is the file name without its extension.
	Name string
	// Description is the leading comment block, without the "#".
	Description string
	// SimSkip is why the simulator does not run the trace; "" when it does.
	SimSkip string
	// Config is the TOML of the groups.
	Config string
	// Steps are the inputs, in order of time.
	Steps []Step
	// Expect is the expected log (see Log.Lines).
	Expect []string

	path  string
	lines []string // the file, for Rewrite
	first int      // index in lines of the first step
}

// Kind is what a step does.
type Kind uint8

// Step kinds.
const (
	Arrive Kind = iota + 1
	Done
	Tick
	Advance
)

// Step is one input of a trace.
type Step struct {
	Line int           // line number in the file
	At   time.Duration // instant since the trace's start
	Kind Kind

	Request string // Arrive, Done: the request's name

	// Arrive:
	Group    string // "": the first group
	Key      string
	Priority string // "sheddable", "default" or "critical"
	Cost     int64  // 0: the group's rate.cost

	Outcome string // Done: "success", "dropped" or "ignored"

	Text string // the step as written, after its instant
}

// Load reads and parses the trace file at path.
func Load(path string) (*Trace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tr, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	tr.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	tr.path = path
	return tr, nil
}

// Glob loads every trace matching pattern, in name order.
func Glob(pattern string) ([]*Trace, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("conformance: no trace matches %s", pattern)
	}
	var out []*Trace
	for _, p := range paths {
		tr, err := Load(p)
		if err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	return out, nil
}

// Parse parses a trace's text. Errors name the line.
func Parse(text []byte) (*Trace, error) {
	tr := &Trace{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		tr.lines = append(tr.lines, sc.Text())
	}
	const (
		header = iota
		config
		steps
	)
	part := header
	var desc, cfg []string
	inDesc := true // the leading comment block
	var last time.Duration
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("%d: %s", i+1, fmt.Sprintf(format, args...))
	}
	for i, raw := range tr.lines {
		line := strings.TrimSpace(raw)
		switch part {
		case header:
			switch {
			case strings.HasPrefix(line, "#"):
				if inDesc {
					desc = append(desc, strings.TrimSpace(strings.TrimPrefix(line, "#")))
				}
				continue
			case line == "":
				continue
			case strings.HasPrefix(line, "sim:"):
				why, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(line, "sim:")), "skip ")
				if !ok || strings.TrimSpace(why) == "" {
					return nil, bad(i, `want "sim: skip REASON", got %q`, line)
				}
				tr.SimSkip = strings.TrimSpace(why)
			case line == "config":
				part = config
			default:
				return nil, bad(i, `want a comment, "sim: skip REASON" or "config", got %q`, line)
			}
			inDesc = false
		case config:
			if line == "steps" {
				part = steps
				tr.first = i + 1
				continue
			}
			cfg = append(cfg, raw)
		case steps:
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			at, rest, _ := strings.Cut(line, " ")
			d, err := time.ParseDuration(at)
			if err != nil || d < 0 {
				return nil, bad(i, "want an instant (a Go duration such as 250ms), got %q", at)
			}
			if d < last {
				return nil, bad(i, "instant %v before the previous line's %v", d, last)
			}
			last = d
			rest = strings.TrimSpace(rest)
			if out, ok := strings.CutPrefix(rest, ">"); ok {
				tr.Expect = append(tr.Expect, eventLine(d, strings.Join(strings.Fields(out), " ")))
				continue
			}
			s, err := parseStep(rest)
			if err != nil {
				return nil, bad(i, "%v", err)
			}
			s.Line, s.At, s.Text = i+1, d, strings.Join(strings.Fields(rest), " ")
			tr.Steps = append(tr.Steps, s)
			tr.Expect = append(tr.Expect, stepLine(&s))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if part != steps {
		return nil, errors.New(`1: no "config" block followed by "steps"`)
	}
	if len(tr.Steps) == 0 {
		return nil, fmt.Errorf("%d: no steps", len(tr.lines))
	}
	tr.Description = strings.TrimSpace(strings.Join(desc, "\n"))
	tr.Config = strings.Join(cfg, "\n") + "\n"
	return tr, nil
}

// parseStep parses a step's words after its instant.
func parseStep(s string) (Step, error) {
	w := strings.Fields(s)
	if len(w) == 0 {
		return Step{}, errors.New("empty step")
	}
	st := Step{Priority: "default"}
	switch w[0] {
	case "arrive":
		st.Kind = Arrive
		if len(w) < 2 || strings.Contains(w[1], "=") {
			return st, errors.New("arrive: want a request name")
		}
		st.Request = w[1]
		for _, kv := range w[2:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				return st, fmt.Errorf("arrive %s: want key=value, got %q", st.Request, kv)
			}
			switch k {
			case "priority":
				switch v {
				case "sheddable", "default", "critical":
				default:
					return st, fmt.Errorf("arrive %s: priority %q: want sheddable, default or critical", st.Request, v)
				}
				st.Priority = v
			case "key":
				st.Key = v
			case "group":
				st.Group = v
			case "cost":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 {
					return st, fmt.Errorf("arrive %s: cost %q: want a positive integer", st.Request, v)
				}
				st.Cost = n
			default:
				return st, fmt.Errorf("arrive %s: unknown %q (want priority, key, cost or group)", st.Request, k)
			}
		}
	case "done":
		st.Kind = Done
		if len(w) != 3 {
			return st, errors.New("done: want done NAME success|dropped|ignored")
		}
		st.Request, st.Outcome = w[1], w[2]
		switch st.Outcome {
		case "success", "dropped", "ignored":
		default:
			return st, fmt.Errorf("done %s: outcome %q: want success, dropped or ignored", st.Request, st.Outcome)
		}
	case "tick", "advance":
		st.Kind = Tick
		if w[0] == "advance" {
			st.Kind = Advance
		}
		if len(w) != 1 {
			return st, fmt.Errorf("%s takes nothing, got %q", w[0], strings.Join(w[1:], " "))
		}
	default:
		return st, fmt.Errorf("unknown step %q (want arrive, done, tick, advance, or > for an outcome)", w[0])
	}
	return st, nil
}

func stepLine(s *Step) string { return fmt.Sprintf("%v %s (line %d)", s.At, s.Text, s.Line) }

func eventLine(at time.Duration, what string) string { return fmt.Sprintf("%v > %s", at, what) }

// Log is what a runner saw, in the order of the trace's expectations: the
// steps it ran and the outcomes they had. Begin a step, report the action's
// own outcomes with Own and what it did to other requests with Caused; a
// timer that ends a wait between steps is an action of its own (Action).
type Log struct {
	lines  []string
	caused []caused
}

type caused struct {
	at      time.Duration
	request string
	what    string
}

// Begin records that step s runs now, after every wait that ended by its
// instant.
func (l *Log) Begin(s *Step) {
	l.Action()
	l.lines = append(l.lines, stepLine(s))
}

// Action starts an action that is not a step (a wait bound ending).
func (l *Log) Action() {
	slices.SortStableFunc(l.caused, func(a, b caused) int { return strings.Compare(a.request, b.request) })
	for _, c := range l.caused {
		l.lines = append(l.lines, eventLine(c.at, c.what))
	}
	l.caused = l.caused[:0]
}

// Own records an outcome of the current action itself at instant at.
func (l *Log) Own(at time.Duration, format string, args ...any) {
	l.lines = append(l.lines, eventLine(at, fmt.Sprintf(format, args...)))
}

// Caused records an outcome the current action had for another request.
func (l *Log) Caused(at time.Duration, request, format string, args ...any) {
	l.caused = append(l.caused, caused{at, request, fmt.Sprintf(format, args...)})
}

// Lines returns the log: a line per step run ("AT STEP (line L)") and per
// outcome ("AT > WHAT").
func (l *Log) Lines() []string {
	l.Action()
	return l.lines
}

// Check compares the log with the trace's expectations and describes the
// first difference, with the outcomes around it; nil when they agree.
func (tr *Trace) Check(l *Log) error {
	got := l.Lines()
	i := 0
	for i < len(got) && i < len(tr.Expect) && got[i] == tr.Expect[i] {
		i++
	}
	if i == len(got) && i == len(tr.Expect) {
		return nil
	}
	show := func(ls []string) string {
		lo, hi := max(i-3, 0), min(i+4, len(ls))
		var b strings.Builder
		for j := lo; j < hi; j++ {
			mark := "  "
			if j == i {
				mark = "=>"
			}
			fmt.Fprintf(&b, "\t%s %s\n", mark, ls[j])
		}
		if i >= len(ls) {
			b.WriteString("\t=> (end)\n")
		}
		return b.String()
	}
	return fmt.Errorf("%s: outcomes differ at entry %d:\nwant\n%sgot\n%s", tr.Name, i+1, show(tr.Expect), show(got))
}

// Rewrite writes the trace file back with the outcomes of l in place of its
// expected ones, keeping everything else (comments included).
func (tr *Trace) Rewrite(l *Log) error {
	got := l.Lines()
	// Outcomes before the first step cannot happen; the rest follow the
	// step they came after.
	after := map[int][]string{} // step line number -> outcomes
	line, next := 0, 0
	for _, g := range got {
		if next < len(tr.Steps) && g == stepLine(&tr.Steps[next]) {
			line = tr.Steps[next].Line
			next++
			continue
		}
		at, what, _ := strings.Cut(g, " > ")
		after[line] = append(after[line], fmt.Sprintf("%-8s > %s", at, what))
	}
	out := slices.Clone(tr.lines[:tr.first])
	for i := tr.first; i < len(tr.lines); i++ {
		t := strings.TrimSpace(tr.lines[i])
		if at, rest, ok := strings.Cut(t, " "); ok && strings.HasPrefix(strings.TrimSpace(rest), ">") {
			if _, err := time.ParseDuration(at); err == nil {
				continue // an old outcome
			}
		}
		out = append(out, tr.lines[i])
		out = append(out, after[i+1]...)
	}
	return os.WriteFile(tr.path, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}
