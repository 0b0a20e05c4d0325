//go:build !nodemo

package main

import (
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/lab"
	"github.com/sluicehq/sluice/cmd/internal/simulate"
	"github.com/sluicehq/sluice/configs"
)

// labConfig is the config the lab's "target" contender runs (its
// sluice.toml, cmd/internal/lab/contenders.toml) for a 300 ms SLO, beside a
// second group that sees nothing in the daemon but is simulated all the
// same.
const labConfig = `
[upstream]
url = "http://127.0.0.1:9000"

[[group]]
name = "api"
  [group.concurrency]
  law = "target"
  [group.targets]
  latency  = "300ms"
  quantile = 0.99
  cpu    = 0
  memory = 0
`

const twoGroups = `
[upstream]
url = "http://127.0.0.1:9000"

[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.concurrency]
  law = "target"
  [group.targets]
  latency = "300ms"

[[group]]
name = "batch"
  [group.concurrency]
  law   = "fixed"
  limit = 30
  [group.targets]
  latency = "1s"
`

// TestSimulateShippedScenario runs a shipped scenario and checks every
// figure of the phase table, and the goodput of every row of the time
// table, against the simulator's own report of the same run; that the
// target law holds the overloaded backend near its capacity; and that the
// chart is a PNG of the three panels.
func TestSimulateShippedScenario(t *testing.T) {
	config := writeConfig(t, "", "", labConfig)
	chart := filepath.Join(t.TempDir(), "chart.png")
	code, out, errOut := runArgs("simulate", "-config", config, "-scenario", "overload", "-png", chart)
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}

	cfg, err := configs.Load(config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := lab.LoadScenario("overload")
	if err != nil {
		t.Fatal(err)
	}
	w, err := simulate.FromLab(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := simulate.ForGroup(w, cfg, &cfg.Groups[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(r.Scenario, r.Law)
	if err != nil {
		t.Fatal(err)
	}

	rows := tableRows(t, out, "phase")
	if len(rows) != len(rep.Phases) {
		t.Fatalf("%d phase rows, the report has %d phases:\n%s", len(rows), len(rep.Phases), out)
	}
	for i, p := range rep.Phases {
		want := []string{p.Name, p.Start.String(), fmt.Sprintf("%.0f", p.Offered), fmt.Sprintf("%.0f", p.Goodput),
			fmt.Sprintf("%.0f%%", 100*p.Goodput/rep.Capacity), ms(p.P50).String(), ms(p.P99).String(),
			fmt.Sprintf("%.1f%%", 100*p.RejectRate), fmt.Sprintf("%.1f%%", 100*p.DropRate),
			fmt.Sprintf("%d..%d", p.Limit.Min, p.Limit.Max), fmt.Sprintf("%.0f", p.Limit.SteadyMean)}
		if got := strings.Join(rows[i], " "); got != strings.Join(want, " ") {
			t.Errorf("phase %s: row %q, report %q", p.Name, got, strings.Join(want, " "))
		}
	}
	at3C := rep.Phases[1]
	if at3C.Goodput < 0.9*rep.Capacity || at3C.Goodput > 1.02*rep.Capacity || at3C.P99 > rep.SLO {
		t.Errorf("at 3×C: goodput %.0f of C = %.0f, p99 %v: the target law should hold C within the SLO", at3C.Goodput, rep.Capacity, at3C.P99)
	}
	if !strings.Contains(out, "rejected in 2:3C: queue_timeout ") {
		t.Errorf("no rejections by reason at 3×C:\n%s", out)
	}

	times := tableRows(t, out, "time")
	if len(times) != 16 { // 80 s in rows of 5 s
		t.Fatalf("%d time rows, want 16:\n%s", len(times), out)
	}
	for i, row := range times {
		from := time.Duration(i) * 5 * time.Second
		win := rep.Window(from, from+5*time.Second)
		if row[0] != from.String() || row[2] != fmt.Sprintf("%.0f", win.Goodput) {
			t.Errorf("time row %d %q: want from %v, goodput %.0f", i, row, from, win.Goodput)
		}
	}

	f, err := os.Open(chart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("chart: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 3*240 {
		t.Errorf("chart %v, want 960×720 (three panels)", b)
	}
	if !strings.Contains(out, "chart: "+chart) {
		t.Errorf("output does not name the chart:\n%s", out)
	}
}

// TestSimulateFlags describes the service and the load by flags and
// simulates both groups of a config, each with its own law; without -png
// it writes nothing into the working folder.
func TestSimulateFlags(t *testing.T) {
	config := writeConfig(t, "", "", twoGroups)
	cwd := t.TempDir()
	t.Chdir(cwd)
	code, out, errOut := runArgs("simulate", "-config", config, "-capacity", "800", "-mean", "50ms",
		"-load", "1x for 10s, 3x for 20s", "-change", "20s:workers=20", "-retries", "2")
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"sluice simulate: -load 1x for 10s, 3x for 20s, 30s of load, config " + config,
		"service: 40 workers, exponential service time of mean 50ms (median 34.66ms): capacity C = 800 req/s",
		"changes: at 20s 20 workers",
		"load (× C): 1x from 0s, 3x from 10s",
		"give up after 10s, 2 retries after 10ms jittered, seed 1",
		`group "api": law target, limit 1..1000 from 20; targets p99 ≤ 300ms`,
		`group "batch": law fixed, limit 30;`,
		"each group is simulated alone with all of this load",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if left, _ := os.ReadDir(cwd); strings.Contains(out, "chart:") || len(left) > 0 {
		t.Errorf("no -png drew a chart: %v\n%s", left, out)
	}
	// Each group runs its own law: the fixed one never moves its limit.
	if rows := tableRows(t, out[strings.Index(out, `group "batch"`):], "phase"); len(rows) != 2 || rows[1][9] != "30..30" {
		t.Errorf("batch phases %q", rows)
	}

	code, out, _ = runArgs("simulate", "-config", config, "-group", "batch", "-scenario", "step", "-capacity", "200", "-workers", "4", "-png", "")
	if code != exitOK || strings.Contains(out, `group "api"`) || strings.Contains(out, "each group is simulated alone") || !strings.Contains(out, "service: 4 workers, exponential service time of mean 20ms (median 13.86ms): capacity C = 200 req/s") {
		t.Errorf("-group batch on step at 200/s: code %d\n%s", code, out)
	}
}

// TestSimulateErrors checks that each mistake is named and exits as the
// other commands do: 2 for the command line, 1 for a bad file.
func TestSimulateErrors(t *testing.T) {
	config := writeConfig(t, "", "", twoGroups)
	bad := writeConfig(t, "", "", "[upstream]\nurl = \"http://127.0.0.1:9000\"\n[[group]]\nname = \"x\"\nlimt = 3\n")
	badLaw := writeConfig(t, "", "", "[upstream]\nurl = \"http://127.0.0.1:9000\"\n[[group]]\nname = \"x\"\n  [group.concurrency]\n  law = \"pid\"\n")
	badScenario := filepath.Join(t.TempDir(), "x.scenario")
	if err := os.WriteFile(badScenario, []byte("duration 1s\nslo 1s\nload at=0s x=1\nwarp 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-scenario", "step", "-bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"-config", config}, exitUsage, "give the load: -scenario NAME"},
		{[]string{"-scenario", "step", "-load", "1x"}, exitUsage, "give one"},
		{[]string{"-scenario", "nosuch"}, exitUsage, `no scenario "nosuch"`},
		{[]string{"-config", config, "-group", "nosuch", "-scenario", "step"}, exitUsage, `-group "nosuch": the config has no such group (it has api, batch)`},
		{[]string{"-capacity", "800", "-load", "1x"}, exitUsage, "give two of the service's capacity, its workers"},
		{[]string{"-workers", "16", "-load", "1x"}, exitUsage, "give two of the service's capacity, its workers"},
		{[]string{"-capacity", "800", "-mean", "5ms", "-load", "3y"}, exitUsage, `-load: load segment 1: rate "3y"`},
		{[]string{"-capacity", "800", "-latency", "5ms", "-load", "1x"}, exitUsage, "-latency is gone: say -mean D or -median D"},
		{[]string{"-scenario", "step", "-capacity", "1500", "-workers", "16", "-mean", "10ms"}, exitUsage, "serve 1600 req/s, not the capacity 1500"},
		{[]string{"-scenario", "step", "-shared-costs", "send=1ms"}, exitUsage, "give it"},
		{[]string{"-scenario", "step", "-shared-cores", "0"}, exitUsage, "0 shared cores"},
		{[]string{"-scenario", "step", "-shared-cores", "2", "-shared-costs", "sent=1ms"}, exitUsage, `unknown cost "sent"`},
		{[]string{"-lab", filepath.Join(t.TempDir(), "none.json")}, exitError, "no such file"},
		{[]string{"-scenario", "step", "-change", "10s:cores=2"}, exitUsage, `unknown key "cores"`},
		{[]string{"-scenario", "step", "-tenants", "a=1,a=2"}, exitUsage, `"a" given twice`},
		{[]string{"-scenario", "step", "-priorities", "urgent=1"}, exitUsage, `priority "urgent"`},
		{[]string{"-scenario", "step", "-retries", "-1"}, exitUsage, "-retries -1"},
		{[]string{"-scenario", "step", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"-config", bad, "-scenario", "step"}, exitError, bad + ":5: group[0].limt: unknown key"},
		{[]string{"-config", badLaw, "-scenario", "step"}, exitError, badLaw + `:6: group[0].concurrency.law: must be one of "fixed", "aimd", `},
		{[]string{"-config", filepath.Join(t.TempDir(), "none.toml"), "-scenario", "step"}, exitError, "no such file"},
		{[]string{"-scenario", badScenario}, exitError, "line 4: warp: unknown directive"},
		{[]string{"-scenario", "step", "-png", filepath.Join(t.TempDir(), "no", "dir", "c.png")}, exitError, "chart:"},
	} {
		code, _, errOut := runArgs(append([]string{"simulate"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("simulate %q: code %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// tableRows returns the cells of the rows of the table whose header starts
// with first, up to the first line that is not a row of it.
func tableRows(t *testing.T, out, first string) [][]string {
	t.Helper()
	var rows [][]string
	in := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case !in && len(f) > 0 && f[0] == first:
			in = true
		case in && (len(f) < 5 || strings.HasSuffix(f[0], ":") || f[0] == "rejected"):
			return rows
		case in:
			rows = append(rows, f)
		}
	}
	if !in {
		t.Fatalf("no table starting %q in:\n%s", first, out)
	}
	return rows
}

// TestSimulateLeftOut: a build with -tags nodemo, the lean one without the
// lab, links neither the simulator nor what simulate builds on it.
func TestSimulateLeftOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "nodemo", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/sluicehq/sluice/adaptive/sim" || dep == "github.com/sluicehq/sluice/cmd/internal/simulate" {
			t.Errorf("a nodemo build links %s", dep)
		}
	}
}

// TestSimulateAgainstTheLab: -lab takes the scenario and the config of a
// recorded lab run and prints one row per phase and per second after a
// step, with simulate.Compare's figures and ratios; -shared-cores puts
// the service on the lab's shared cores and says so.
func TestSimulateAgainstTheLab(t *testing.T) {
	const recorded = "../../cmd/internal/simulate/testdata/lab/fast-sweep/sluice.json"
	code, out, errOut := runArgs("simulate", "-lab", recorded, "-shared-cores", "2")
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"sluice simulate: lab scenario fast-sweep, 35s of load, config ../../cmd/internal/simulate/testdata/lab/fast-sweep/sluice/sluice.toml",
		"shared: 2 cores with sluice and the clients; a request costs there send 90µs, forward 100µs or refuse 30µs, handle 90µs; a trip back 1.5ms",
		"against the lab: " + recorded + " (sluice, started 2026-12-03 19:17:10; its generator sent late by 2.0ms at p99)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	run, err := simulate.LoadLabRun(recorded)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := lab.LoadScenario("fast-sweep")
	w, _ := simulate.FromLab(s)
	w.Scenario.Host, _ = simulate.HostOf(2, "")
	cfg, err := configs.Load("../../cmd/internal/simulate/testdata/lab/fast-sweep/sluice/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := simulate.ForGroup(w, cfg, &cfg.Groups[0], 0)
	rep, _ := sim.Run(r.Scenario, r.Law)
	held, err := simulate.Compare(rep, run)
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, out, "stretch")                // and the note under it
	if len(rows) != len(held)+1 || len(held) != 3+2*3 { // three phases, 3 s after each of two steps
		t.Fatalf("%d rows, %d stretches:\n%s", len(rows), len(held), out)
	}
	for i, h := range held {
		want := fmt.Sprintf("%s %.0f %.0f %.3f %v %v %.2f", h.Name, h.LabGoodput, h.SimGoodput, h.SimGoodput/h.LabGoodput,
			ms(h.LabP99), ms(h.SimP99), float64(h.SimP99)/float64(h.LabP99))
		if got := strings.Join(rows[i], " "); !strings.HasPrefix(got, want) {
			t.Errorf("row %d %q, want it to start %q", i, got, want)
		}
	}
	if code, _, errOut := runArgs("simulate", "-lab", recorded, "-config", writeConfig(t, "", "", twoGroups)); code != exitUsage || !strings.Contains(errOut, "give -group") {
		t.Errorf("two groups against one lab run: code %d, %q", code, errOut)
	}
}
