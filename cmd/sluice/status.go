package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/cmd/internal/cli"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

var statusCommand = cli.Command{
	Name:    "status",
	Summary: "show a running sluice's groups: limits, latency, throughput, rejections",
	Usage: `usage: sluice status [-admin URL] [-token-file FILE] [-timeout D] [-json]

Asks the admin API of a running sluice (GET /v1/status and GET /v1/groups)
and prints its state and a table of its groups: the law, the concurrency
limit and its bounds, requests in flight and queued, the rate limit, latency
p50 and p99 against the target, throughput, rejections since start (with the
commonest reason), and the law's reason for its last change of the limit.
A group marked * runs with a runtime override (PATCH /v1/groups/NAME). With
global quotas (rate scope "global"), a line tells whether Redis decides them
or the fallback does, and the node count they are shared by. A line tells the
upstream's circuit breaker: closed, open or half-open, since when and why.
A line for each front-end ([permit], [rls]) tells its address, whether its
calls need a token, and its counts since start (held: permits held now).

  -admin URL        the admin API: http://HOST:PORT or unix:///PATH.sock
                    (default http://127.0.0.1:9901, admin.listen's default)
  -token-file FILE  the file holding the bearer token (admin.token_file):
                    needed when the admin API listens off loopback
  -timeout D        how long to wait for the answers (default 3s)
  -json             print the API's answers as one JSON object,
                    {"status": ..., "groups": [...]}, instead of the table

Exit codes: 0 printed; 1 the admin API could not be reached or answered an
error; 2 the command line is wrong.
`,
	Run: runStatus,
}

// statusArgs are the flags of sluice status.
type statusArgs struct {
	admin, tokenFile string
	timeout          time.Duration
	json             bool
}

// statusFlags is the flag set of sluice status, parsing into a.
func statusFlags(a *statusArgs) *flag.FlagSet {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.admin, "admin", "http://"+configs.DefaultAdminListen, "")
	fs.StringVar(&a.tokenFile, "token-file", "", "")
	fs.DurationVar(&a.timeout, "timeout", 3*time.Second, "")
	fs.BoolVar(&a.json, "json", false, "")
	return fs
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var a statusArgs
	fs := statusFlags(&a)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || a.timeout <= 0 {
		switch {
		case err != nil && !errors.Is(err, flag.ErrHelp):
			cli.Fprintf(stderr, "sluice status: %v\n", err)
		case err == nil && fs.NArg() != 0:
			cli.Fprintf(stderr, "sluice status: unexpected argument %q\n", fs.Arg(0))
		case err == nil:
			cli.Fprintf(stderr, "sluice status: -timeout must be positive, got %v\n", a.timeout)
		}
		cli.Fprintf(stderr, "usage: sluice status [-admin URL] [-token-file FILE] [-timeout D] [-json]\n")
		return exitUsage
	}
	c, err := newAdminClient(a.admin, a.tokenFile, a.timeout)
	if err != nil {
		cli.Fprintf(stderr, "sluice status: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var status, groups json.RawMessage
	if err := c.get(ctx, "/v1/status", &status); err != nil {
		cli.Fprintf(stderr, "sluice status: %v\n", err)
		return exitError
	}
	if err := c.get(ctx, "/v1/groups", &groups); err != nil {
		cli.Fprintf(stderr, "sluice status: %v\n", err)
		return exitError
	}
	if a.json {
		out, err := json.MarshalIndent(struct {
			Status json.RawMessage `json:"status"`
			Groups json.RawMessage `json:"groups"`
		}{status, groupsList(groups)}, "", "  ")
		if err != nil {
			cli.Fprintf(stderr, "sluice status: %v\n", err)
			return exitError
		}
		cli.Fprintf(stdout, "%s\n", out)
		return exitOK
	}
	var st api.Status
	var gs api.Groups
	if err := json.Unmarshal(status, &st); err != nil {
		cli.Fprintf(stderr, "sluice status: %s/v1/status: not a sluice status: %v\n", c.base, err)
		return exitError
	}
	if err := json.Unmarshal(groups, &gs); err != nil {
		cli.Fprintf(stderr, "sluice status: %s/v1/groups: not sluice groups: %v\n", c.base, err)
		return exitError
	}
	printStatus(stdout, &st, gs.Groups, time.Now())
	return exitOK
}

// groupsList is the "groups" array of a /v1/groups answer, or the answer
// itself if it has none.
func groupsList(b json.RawMessage) json.RawMessage {
	var v struct {
		Groups json.RawMessage `json:"groups"`
	}
	if json.Unmarshal(b, &v) == nil && v.Groups != nil {
		return v.Groups
	}
	return b
}

// adminClient reads the admin API.
type adminClient struct {
	base  string // for messages: the -admin URL
	http  *http.Client
	root  string // URL the paths are appended to
	token string
}

func newAdminClient(raw, tokenFile string, timeout time.Duration) (*adminClient, error) {
	c := &adminClient{base: strings.TrimRight(raw, "/")}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, ResponseHeaderTimeout: timeout}
	if path, ok := strings.CutPrefix(raw, "unix://"); ok {
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("-admin %q: a unix socket is unix:// and an absolute path", raw)
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}
		c.root = "http://localhost"
	} else {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("-admin %q: want http://HOST:PORT or unix:///PATH.sock", raw)
		}
		c.root = strings.TrimRight(u.String(), "/")
	}
	c.http = &http.Client{Transport: tr, Timeout: timeout}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("-token-file: %w", err)
		}
		c.token = strings.TrimSpace(string(b))
	}
	return c, nil
}

// get fetches path and stores the JSON answer in out, or says why not in
// words an operator can act on.
func (c *adminClient) get(ctx context.Context, path string, out *json.RawMessage) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.root+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reachError(c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s%s: reading the answer: %w", c.base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized {
			hint = " (pass the token with -token-file)"
		}
		return fmt.Errorf("%s%s: %s: %s%s", c.base, path, resp.Status, msg, hint)
	}
	if !json.Valid(body) {
		return fmt.Errorf("%s%s: the answer is not JSON: is this sluice's admin API?", c.base, path)
	}
	*out = body
	return nil
}

// reachError explains a failed request.
func reachError(base string, err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("cannot reach the admin API at %s: nothing listens there (is sluice running? is admin.listen elsewhere? set -admin)", base)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the admin API at %s did not answer in time", base)
	}
	return fmt.Errorf("cannot reach the admin API at %s: %v", base, err)
}

// printStatus writes the status lines and the table of groups.
func printStatus(w io.Writer, st *api.Status, gs []api.Group, now time.Time) {
	src := st.Config.Source
	if src == "" {
		src = "embedded default"
	}
	hash := st.Config.Hash
	if len(hash) > 8 {
		hash = hash[:8]
	}
	ready := "ready"
	if !st.Ready {
		ready = "NOT READY: " + st.NotReady
	}
	cli.Fprintf(w, "sluice %s · up %s · config %s (%s) · %s\n", st.Version,
		shortDuration(time.Duration(st.UptimeSeconds*float64(time.Second))), src, hash, ready)
	r := st.Resources
	cli.Fprintf(w, "%s\n%s\n%s\n", signalText("cpu", r.CPU, r.CPUSource), signalText("memory", r.Memory, r.MemorySource),
		signalText("cpu pressure", r.CPUPressure, r.CPUPressureSource))
	if st.State.SaveError != "" {
		cli.Fprintf(w, "state file: %s\n", st.State.SaveError)
	}
	if r := st.Config.RefusedReload; r != nil && (st.Config.Loaded == nil || r.At.After(*st.Config.Loaded)) {
		cli.Fprintf(w, "reload refused %s ago (by %s), the running config keeps serving: %s\n",
			shortDuration(max(0, now.Sub(r.At))), r.By, r.Error)
	}
	if r := st.Redis; r != nil {
		line := "redis " + r.Mode + " since " + r.Since.Local().Format("15:04:05")
		if r.Mode == "fallback" {
			line += " (" + r.LastError + ")"
			if r.NextProbe != nil {
				line += ", next probe in " + shortDuration(max(0, r.NextProbe.Sub(now)))
			}
		}
		seen := "? seen"
		if r.Nodes.Observed != nil {
			seen = strconv.Itoa(*r.Nodes.Observed) + " seen"
		}
		cli.Fprintf(w, "%s · nodes %d (%d configured, %s)\n", line, r.Nodes.Share, r.Nodes.Configured, seen)
	}
	if c := st.Circuit; c != nil {
		line := "upstream circuit " + strings.ReplaceAll(c.State, "_", "-")
		if c.Reason != "" {
			line += " since " + c.Since.Local().Format("15:04:05") + " (" + shortDuration(max(0, now.Sub(c.Since))) + " ago): " + c.Reason
		}
		cli.Fprintf(w, "%s\n", line)
	}
	for _, f := range st.Fronts {
		auth := "no token (socket mode)"
		if f.Token {
			auth = "token"
		}
		counts := make([]string, 0, len(f.Counts))
		for _, k := range slices.Sorted(maps.Keys(f.Counts)) {
			counts = append(counts, strings.ReplaceAll(k, "_", " ")+" "+strconv.FormatUint(f.Counts[k], 10))
		}
		cli.Fprintf(w, "%s %s · %s · %s\n", f.Name, f.Listen, auth, strings.Join(counts, ", "))
	}
	cli.Fprintf(w, "\n")

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cli.Fprintf(tw, "GROUP\tLAW\tLIMIT\tBOUNDS\tIN FLIGHT\tQUEUE\tRATE/S\tP50\tP99\tTARGET\tTHRU/S\tREJECTED\tLAST CHANGE\n")
	var overridden, shadowed []string
	for _, g := range gs {
		name := g.Name
		if g.Shadow.Line != "" {
			if g.Mode == spec.ModeShadow {
				name += " (shadow)"
			}
			shadowed = append(shadowed, g.Name+": "+g.Shadow.Line)
		}
		if g.Override != nil {
			name += "*"
			var ch []string
			for _, c := range g.Override.Changes {
				ch = append(ch, c.Field+" "+c.From+" → "+c.To)
			}
			keep := ""
			if g.Override.KeepOnReload {
				keep = ", kept on reload"
			}
			overridden = append(overridden, g.Name+": "+strings.Join(ch, ", ")+keep)
		}
		rate := "–"
		if g.Rate != nil {
			rate = number(g.Rate.PerSecond)
			if g.Rate.Managed {
				rate += " (law)"
			}
			if g.Rate.Global != nil {
				rate += " (global)"
			}
		}
		target := "–"
		if g.Targets.Latency != nil {
			target = quantileName(g.Targets.Quantile) + " ≤ " + seconds(g.Targets.Latency)
		}
		change := "–"
		if c := g.LastChange; c != nil {
			change = fmt.Sprintf("%d → %d: %s (%s ago)", c.From, c.To, c.Reason, shortDuration(now.Sub(c.At)))
		}
		cli.Fprintf(tw, "%s\t%s\t%d\t%d–%d\t%d\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			name, g.Law, g.Limit, g.Min, g.Max, g.InFlight, g.Queue.Length, g.Queue.Max, rate,
			seconds(g.Latency.P50), seconds(g.Latency.P99), target, number(g.Throughput),
			rejections(g.Requests.Rejected, g.Requests.ByReason), change)
	}
	_ = tw.Flush()
	if len(overridden) > 0 {
		cli.Fprintf(w, "\n* runtime override in force:\n")
		for _, o := range overridden {
			cli.Fprintf(w, "  %s\n", o)
		}
	}
	if len(shadowed) > 0 {
		cli.Fprintf(w, "\nshadow mode (admitted all the same):\n")
		for _, o := range shadowed {
			cli.Fprintf(w, "  %s\n", o)
		}
	}
}

// signalText is a guarded signal's line: its value, or why it is unknown,
// and where it comes from.
func signalText(name string, s api.Signal, source string) string {
	t := name + " "
	switch {
	case s.Known && s.Value != nil:
		t += fmt.Sprintf("%.0f%%", *s.Value*100)
	case s.Reason == "" || s.Reason == source:
		t += "unknown"
	default:
		t += "unknown (" + s.Reason + ")"
	}
	if source != "" {
		t += " · " + source
	}
	return t
}

// rejections is the total and its commonest reason.
func rejections(total uint64, by map[string]uint64) string {
	if total == 0 {
		return "0"
	}
	reasons := make([]string, 0, len(by))
	for r, n := range by {
		if n > 0 {
			reasons = append(reasons, r)
		}
	}
	sort.Slice(reasons, func(i, j int) bool {
		if by[reasons[i]] != by[reasons[j]] {
			return by[reasons[i]] > by[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	if len(reasons) == 0 {
		return fmt.Sprint(total)
	}
	return fmt.Sprintf("%d (%s %d)", total, reasons[0], by[reasons[0]])
}

// seconds formats a duration given in seconds, "–" for none.
func seconds(s *float64) string {
	if s == nil {
		return "–"
	}
	d := time.Duration(*s * float64(time.Second))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func number(x float64) string {
	switch {
	case x >= 100 || x == float64(int64(x)):
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func quantileName(q float64) string {
	if q == 0 {
		q = 0.99
	}
	return "p" + strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", q*100), "0"), ".")
}

// shortDuration formats d to the second, without zero tails: "3h2m", "45s".
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", d/time.Minute, d%time.Minute/time.Second)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
