package adaptive

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The data-driven tests, in the style of go.etcd.io/raft's datadriven package
// (written here, no dependency): each file in testdata/*.txt opens with a "#"
// header explaining the scenario, then holds cases of one command line, a
// "----" line and the expected output, each case ending at a blank line.
// Commands drive a law or a policy piece with samples at injected times; run
// with -rewrite to regenerate expected outputs (then read the diff).

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of testdata/*.txt")

type ddCase struct {
	line     int
	comment  string // the # lines just before the command, kept by -rewrite
	cmd      string
	expected string
	actual   string
}

func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runDataDriven(t, f) })
	}
}

func runDataDriven(t *testing.T, path string) {
	header, cases := parseDataDriven(t, path)
	if !strings.HasPrefix(header, "#") {
		t.Fatalf("%s: no # header explaining the scenario", path)
	}
	d := &driver{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), interval: DefaultInterval}
	for i := range cases {
		c := &cases[i]
		out, err := d.run(c.cmd)
		if err != nil {
			out = "error: " + err.Error()
		}
		c.actual = strings.TrimRight(out, "\n")
		if !*rewrite && c.actual != c.expected {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, c.line, c.cmd, c.actual, c.expected)
		}
	}
	if *rewrite {
		var b strings.Builder
		b.WriteString(header)
		for _, c := range cases {
			fmt.Fprintf(&b, "\n%s%s\n----\n%s\n", c.comment, c.cmd, c.actual)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseDataDriven splits a file into its header (comments up to the first
// command) and its cases.
func parseDataDriven(t *testing.T, path string) (string, []ddCase) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		header  strings.Builder
		comment strings.Builder
		cases   []ddCase
		cur     *ddCase
		inOut   bool
		out     []string
	)
	flush := func() {
		if cur != nil {
			cur.expected = strings.Join(out, "\n")
			cases = append(cases, *cur)
		}
		cur, inOut, out = nil, false, nil
	}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "":
			if len(cases) == 0 && header.Len() == 0 && comment.Len() > 0 {
				header.WriteString(comment.String()) // the file's header ends at its first blank line
				comment.Reset()
			}
		case cur == nil && strings.HasPrefix(line, "#"):
			comment.WriteString(line + "\n")
		case cur == nil:
			cur = &ddCase{line: n, cmd: strings.TrimSpace(line), comment: comment.String()}
			comment.Reset()
		case !inOut && line == "----":
			inOut = true
		case !inOut:
			t.Fatalf("%s:%d: want ---- after the command", path, n)
		case strings.TrimSpace(line) == "":
			flush()
		default:
			out = append(out, line)
		}
	}
	flush()
	return header.String(), cases
}

// driver holds the piece under test and the injected clock.
type driver struct {
	now      time.Time
	interval time.Duration
	law      Law
	shedder  *PriorityShedder
	guard    *ResourceGuard
	queue    *QueueWait
	fair     FairShare
}

func (d *driver) run(cmd string) (string, error) {
	f := strings.Fields(cmd)
	args, err := keyValues(f[1:])
	if err != nil {
		return "", err
	}
	switch f[0] {
	case "new":
		return d.newLaw(args)
	case "sample":
		return d.sample(args)
	case "advance":
		dur, err := time.ParseDuration(args.pos)
		if err != nil {
			return "", err
		}
		d.now = d.now.Add(dur)
		return "ok", nil
	case "limit":
		return fmt.Sprintf("limit %d", d.law.Limit()), nil
	case "unmoved":
		t, ok := d.law.(*Target)
		if !ok {
			return "", fmt.Errorf("unmoved: not a target law")
		}
		return unmovedString(t.Unmoved()), nil
	case "shedder":
		d.shedder, err = NewPriorityShedder(ShedderParams{Suffer: args.float("suffer"), Hold: args.dur("hold")})
		return "ok", err
	case "shed":
		s := d.next(args)
		for p := 0; p < NumPriorities; p++ {
			s.ByPriority[p] = PriorityCount{Arrived: args.int("a" + strconv.Itoa(p)), Rejected: args.int("r" + strconv.Itoa(p))}
		}
		return floorString(d.shedder.Update(s)), args.err
	case "guard":
		d.guard, err = NewResourceGuard(ResourceGuardParams{CPU: args.float("cpu"), Memory: args.float("memory"), Hysteresis: args.float("hysteresis")})
		return "ok", err
	case "resources":
		s := d.next(args)
		if v, ok := args.m["cpu"]; ok {
			s.CPU, s.CPUKnown = parseFloat(v), true
		}
		if v, ok := args.m["memory"]; ok {
			s.Memory, s.MemoryKnown = parseFloat(v), true
		}
		return floorString(d.guard.Update(s)), args.err
	case "queuewait":
		o, _ := ParseOrder(args.str("order", "adaptive"))
		q, _ := ParseQuantile(args.str("quantile", "p99"))
		d.queue, err = NewQueueWait(QueueWaitParams{Target: args.dur("target"), Interval: args.dur("interval"),
			Order: o, Latency: args.dur("latency"), Quantile: q})
		return "ok", err
	case "queue":
		s := d.next(args)
		s.QueueLength, s.Queued, s.Rejected = args.int("qlen"), args.int("queued"), args.int("rejected")
		s.QueueWaitMin, s.QueueWaitMax = args.dur("qmin"), args.dur("qmax")
		s.QueueDrained = args.bool("drained")
		s.Latency.P50, s.Latency.P99 = args.dur("p50"), args.dur("p99")
		b := d.queue.Update(s)
		return fmt.Sprintf("wait %v critical %v lifo %v standing %v", b.Wait, b.Critical, b.LIFO, b.Standing), args.err
	case "fair":
		d.fair = FairShare{Slack: args.float("slack")}
		return "ok", args.err
	case "allow":
		ok := d.fair.Allow(args.int("key"), args.int("group"), args.int("limit"), args.int("keys"))
		return fmt.Sprintf("%v (share %.2f)", ok, d.fair.Share(args.int("limit"), args.int("keys"))), args.err
	}
	return "", fmt.Errorf("unknown command %q", f[0])
}

func unmovedString(u Unmoved) string {
	if u == 0 {
		return "unmoved: none"
	}
	return "unmoved: " + u.String()
}

func floorString(f Floor) string {
	if f.Priority == 0 {
		return "admit all"
	}
	return fmt.Sprintf("shed below %v (%v)", f.Priority, f.Reason)
}

// next advances the clock by one interval (or interval=) and returns a sample
// stamped with it.
func (d *driver) next(a *kv) Sample {
	iv := d.interval
	if v := a.dur("interval"); v > 0 {
		iv = v
	}
	d.now = d.now.Add(iv)
	return Sample{Now: d.now, Interval: iv}
}

// newLaw builds the law the registry names, from the settings a group
// gives every law (LawSettings).
func (d *driver) newLaw(a *kv) (string, error) {
	q, _ := ParseQuantile(a.str("quantile", "p99"))
	s := LawSettings{
		Bounds:  Bounds{Min: a.int("min"), Max: a.int("max"), Initial: a.int("initial")},
		Limit:   a.int("limit"),
		Latency: a.dur("latency"), Quantile: q,
		CPU: a.float("cpu"), Memory: a.float("memory"), CPUPressure: a.float("pressure"),
		PressureWindow: a.dur("window"),
		Backoff:        a.float("backoff"), Tolerance: a.float("tolerance"),
		Rate: RateParams{Initial: a.float("rate")},
	}
	var err error
	d.law, err = NewLaw(a.pos, s)
	if err != nil {
		return "", err
	}
	if a.err != nil {
		return "", a.err
	}
	return fmt.Sprintf("limit %d", d.law.Limit()), nil
}

// sample feeds the law one sample (repeat=N times) and prints each decision.
// Unset fields: MaxInFlight and InFlight default to the current limit (in use),
// InFlightStart (instart=) to 0 (unknown), Successes to 250, latency figures
// to lat= when given; cpu=, mem= and pressure= set the resources (unknown when
// absent).
func (d *driver) sample(a *kv) (string, error) {
	n := max(1, a.int("repeat"))
	var b strings.Builder
	for i := 0; i < n; i++ {
		s := d.next(a)
		lim := d.law.Limit()
		s.Limit = lim
		s.MaxInFlight = lim
		if _, ok := a.m["maxin"]; ok {
			s.MaxInFlight = a.int("maxin")
		}
		s.InFlight = s.MaxInFlight
		if _, ok := a.m["inflight"]; ok {
			s.InFlight = a.int("inflight")
		}
		s.InFlightStart = a.int("instart")
		s.Successes = 250
		if _, ok := a.m["ok"]; ok {
			s.Successes = a.int("ok")
		}
		s.Drops, s.Rejected, s.RateRejected = a.int("drops"), a.int("rejected"), a.int("ratereject")
		s.Queued, s.QueueLength, s.QueueCapacity = a.int("queued"), a.int("qlen"), a.int("qcap")
		l := a.dur("lat")
		s.Latency = Latency{Min: l, Mean: l, P50: l, P90: l, P95: l, P99: l, P999: l}
		for k, p := range map[string]*time.Duration{"min": &s.Latency.Min, "mean": &s.Latency.Mean, "p50": &s.Latency.P50,
			"p90": &s.Latency.P90, "p95": &s.Latency.P95, "p99": &s.Latency.P99, "p999": &s.Latency.P999} {
			if _, ok := a.m[k]; ok {
				*p = a.dur(k)
			}
		}
		s.MinRTT = a.dur("minrtt")
		s.Throughput = a.float("tput")
		if v, ok := a.m["cpu"]; ok {
			s.CPU, s.CPUKnown = parseFloat(v), true
		}
		if v, ok := a.m["mem"]; ok {
			s.Memory, s.MemoryKnown = parseFloat(v), true
		}
		if v, ok := a.m["pressure"]; ok {
			s.CPUPressure, s.CPUPressureKnown = parseFloat(v), true
		}
		dec := d.law.Update(s)
		if a.err != nil {
			return "", a.err
		}
		if dec.Limit != d.law.Limit() {
			return "", fmt.Errorf("decision limit %d but Limit() %d", dec.Limit, d.law.Limit())
		}
		verb := "held"
		if dec.Changed {
			verb = "changed"
		}
		fmt.Fprintf(&b, "limit %d", dec.Limit)
		if dec.Rate > 0 {
			fmt.Fprintf(&b, " rate %.0f", dec.Rate)
		}
		if r := dec.Reason.String(); r != "" {
			fmt.Fprintf(&b, " %s: %s\n", verb, r)
		} else {
			fmt.Fprintf(&b, " %s\n", verb)
		}
	}
	return b.String(), nil
}

// kv is a command's arguments: one optional positional word and key=value
// pairs; parse errors collect in err.
type kv struct {
	pos string
	m   map[string]string
	err error
}

func keyValues(fields []string) (*kv, error) {
	a := &kv{m: map[string]string{}}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			if a.pos != "" {
				return nil, fmt.Errorf("two positional arguments: %q and %q", a.pos, f)
			}
			a.pos = f
			continue
		}
		a.m[k] = v
	}
	return a, nil
}

func (a *kv) str(k, def string) string {
	if v, ok := a.m[k]; ok {
		return v
	}
	return def
}

// get parses argument k with parse; a missing key is the zero value.
func get[T any](a *kv, k string, parse func(string) (T, error)) T {
	var zero T
	v, ok := a.m[k]
	if !ok {
		return zero
	}
	x, err := parse(v)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", k, err)
	}
	return x
}

func (a *kv) int(k string) int { return get(a, k, strconv.Atoi) }

func (a *kv) float(k string) float64 {
	return get(a, k, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

func (a *kv) dur(k string) time.Duration { return get(a, k, time.ParseDuration) }

func (a *kv) bool(k string) bool { return get(a, k, strconv.ParseBool) }

func parseFloat(s string) float64 {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return x
}
