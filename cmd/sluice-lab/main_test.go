package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/cmd/internal/lab/report"
)

// childEnv makes the test binary act as sluice-lab itself, for the backend
// child process that "run" starts from os.Executable().
const childEnv = "SLUICE_LAB_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		ctx, stop := signalContext()
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runArgs("help")
	if code != exitOK {
		t.Fatalf("help: code %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("help does not list %q:\n%s", c.name, out)
		}
		code, usage, _ := runArgs("help", c.name)
		if code != exitOK || !strings.HasPrefix(usage, "usage: sluice-lab "+c.name) {
			t.Errorf("help %s: code %d, usage %q", c.name, code, usage)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: sluice-lab COMMAND"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"run"}, "name at least one scenario"},
		{[]string{"run", "-bogus", "step"}, "flag provided but not defined"},
		{[]string{"run", "no-such-scenario"}, `no scenario "no-such-scenario"`},
		{[]string{"run", "-var", "novalue", "step"}, "want NAME=VALUE"},
		{[]string{"run", "-only", "direct,nginx", "step"}, `no contender "nginx"`},
		{[]string{"backend", "-service", "gauss:1ms"}, "unknown distribution"},
		{[]string{"backend", "extra"}, `unexpected argument "extra"`},
		{[]string{"hog", "-nice", "25"}, "nice must be in [0,19], got 25"},
		{[]string{"hog", "extra"}, `unexpected argument "extra"`},
		{[]string{"scenarios", "x"}, "usage: sluice-lab scenarios"},
	} {
		code, _, errOut := runArgs(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

func TestScenariosLists(t *testing.T) {
	code, out, _ := runArgs("scenarios")
	if code != exitOK || !strings.Contains(out, "  step ") || !strings.Contains(out, "  sweep ") {
		t.Fatalf("scenarios: %d %q", code, out)
	}
}

// TestBackendCommand starts "sluice-lab backend", reads its URL from the
// first line of its output, asks it for its stats, and interrupts it.
func TestBackendCommand(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"backend", "-workers", "4", "-service", "const:10ms"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "C=400 req/s") {
		t.Errorf("first line %q", line)
	}
	url := line[strings.Index(line, "http://"):]
	url = strings.Fields(url)[0]
	resp, err := http.Get(url + "/_lab/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Workers int }
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Workers != 4 {
		t.Errorf("stats workers %d", st.Workers)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != exitOK {
		t.Fatalf("backend exit code %d", code)
	}
}

// TestHogCommand starts "sluice-lab hog", waits for the line that says its
// loops run, and interrupts it.
func TestHogCommand(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"hog", "-threads", "1", "-nice", "19"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "1 busy loops at nice 19") {
		t.Errorf("first line %q", line)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != exitOK {
		t.Fatalf("hog exit code %d", code)
	}
}

// TestRunWithBackendProcess runs a 2-second scenario file through the
// real command line, with the backend and a CPU hog as child processes
// (this binary), so the backend's own memory and CPU are measured.
func TestRunWithBackendProcess(t *testing.T) {
	t.Setenv(childEnv, "1")
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.toml")
	os.WriteFile(file, []byte("# Two seconds at half the capacity, beside a CPU hog.\nseed = 3\n[backend]\nworkers = 8\nservice = \"exp:20ms\"\n[hog]\nthreads = 1\nnice = 19\n[load]\npath = \"/x\"\nphases = [{ rate = \"0.5C\", for = \"2s\" }]\n"), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runArgs("run", "-out", out, "-only", "direct", file)
	if code != exitOK {
		t.Fatalf("run: code %d\n%s", code, stderr)
	}
	if strings.TrimSpace(stdout) != filepath.Join(out, "tiny", report.SummaryFile) {
		t.Errorf("stdout %q", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "tiny", "direct.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	tot := r.Load.Totals
	if r.Capacity != 400 || tot.Offered == 0 || tot.OK+tot.Rejected+tot.Errors != tot.Offered || r.Backend.Served < uint64(tot.OK) {
		t.Errorf("run %+v", tot)
	}
	if r.Metrics.PeakRSSBackend == nil || *r.Metrics.PeakRSSBackend <= 0 || r.Metrics.CPUPerReqBackend == nil {
		t.Errorf("backend process not measured: %+v", r.Metrics)
	}
	if !strings.Contains(stderr, "tiny/direct: offered ") {
		t.Errorf("stderr %q", stderr)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "a CPU hog ran beside the backend: 1 busy loops at nice 19") {
		t.Errorf("notes %q, want the hog's", r.Notes)
	}
	if b, err := os.ReadFile(filepath.Join(out, "tiny", "direct", "hog.log")); err != nil || !strings.Contains(string(b), "busy loops") {
		t.Errorf("hog log: %q, %v", b, err)
	}
}

// TestContenderNamesItsOwnSluice: for an A/B of two builds, a contender
// whose vars name its own sluice binary runs that one, and the run says
// so; the others run -sluice's (and -var sluice= is the same as -sluice).
// The contenders only write down the binary they were given and exit.
func TestContenderNamesItsOwnSluice(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ab.toml")
	contender := func(name, vars string) string {
		return "[[contender]]\nname = \"" + name + "\"\nkind = \"command\"\n" +
			"command = [\"sh\", \"-c\", \"echo {{sluice}} > {{dir}}/which; exit 1\"]\nurl = \"http://127.0.0.1:{{port}}\"\n" + vars
	}
	os.WriteFile(file, []byte("# Two sluice binaries side by side: one contender names its own.\nseed = 3\n"+
		"[backend]\nworkers = 8\nservice = \"exp:20ms\"\n[load]\npath = \"/x\"\nphases = [{ rate = \"0.5C\", for = \"2s\" }]\n"+
		contender("new", "vars.sluice = \"/opt/new/sluice\"\n")+contender("old", "")), 0o644)
	for _, flags := range [][]string{{"-sluice", "/opt/old/sluice"}, {"-var", "sluice=/opt/old/sluice"}} {
		out := filepath.Join(dir, flags[0])
		code, _, stderr := runArgs(append(append([]string{"run", "-inprocess", "-out", out}, flags...), file)...)
		if code != exitError {
			t.Fatalf("%v: code %d, want %d (the contenders exit at once)\n%s", flags, code, exitError, stderr)
		}
		for name, want := range map[string]string{"new": "/opt/new/sluice", "old": "/opt/old/sluice"} {
			if b, err := os.ReadFile(filepath.Join(out, "ab", name, "which")); err != nil || strings.TrimSpace(string(b)) != want {
				t.Errorf("%v: contender %s ran %q, %v; want %s", flags, name, b, err, want)
			}
		}
		if note := `ab/new runs its own vars.sluice "/opt/new/sluice", not "/opt/old/sluice"`; !strings.Contains(stderr, note) {
			t.Errorf("%v: stderr does not say %q:\n%s", flags, note, stderr)
		}
	}
}
