package permit_test

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
)

// buildExample builds the example command (permit/example) once per test.
func buildExample(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "example")
	out, err := exec.Command("go", "build", "-o", bin, "./example").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./example: %v\n%s", err, out)
	}
	return bin
}

// TestPoolProcessFollowsTheLimit runs the example worker pool as a process:
// sixteen workers, but sluice's limit of three decides how many jobs run at
// once.
func TestPoolProcessFollowsTheLimit(t *testing.T) {
	bin := buildExample(t)
	e := newEnv(t, queued(3, 64), permit.Params{})
	s := serve(t, e.svc, "unix")
	out, err := exec.Command(bin, "-addr", s.addr, "-group", "jobs", "-workers", "16", "-jobs", "60", "-work", "2ms").CombinedOutput()
	if err != nil {
		t.Fatalf("example: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`jobs done: (\d+) of 60 in .*, at most (\d+) at once on 16 workers`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("example's output: %s", out)
	}
	if done, _ := strconv.Atoi(string(m[1])); done != 60 {
		t.Fatalf("jobs done %d, want 60:\n%s", done, out)
	}
	if peak, _ := strconv.Atoi(string(m[2])); peak < 1 || peak > 3 {
		t.Fatalf("at most %d at once, want 1..3 (the limit):\n%s", peak, out)
	}
	if n := e.obs.count(gate.Success); n != 60 {
		t.Fatalf("the gate saw %d successes, want 60", n)
	}
}

// TestPoolThrottlesItself (issue 26): sixteen workers on a group of two
// slots without a queue, refused workers coming back every 5 ms at most
// (-max-backoff): with the throttle, the pool asks sluice several times
// less often for the same 40 jobs than without it, and drops the rest of
// its asks locally.
func TestPoolThrottlesItself(t *testing.T) {
	bin := buildExample(t)
	asks := map[string]int{}
	for _, throttle := range []string{"true", "false"} {
		e := newEnv(t, jobs(2), permit.Params{})
		s := serve(t, e.svc, "unix")
		out, err := exec.Command(bin, "-addr", s.addr, "-group", "jobs", "-workers", "16", "-jobs", "40", "-work", "5ms",
			"-max-backoff", "5ms", "-throttle="+throttle).CombinedOutput()
		if err != nil {
			t.Fatalf("example -throttle=%s: %v\n%s", throttle, err, out)
		}
		m := regexp.MustCompile(`jobs done: 40 of 40 .*\nasks sent to sluice: (\d+), dropped locally: (\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("example -throttle=%s: %s", throttle, out)
		}
		sent, _ := strconv.Atoi(string(m[1]))
		dropped, _ := strconv.Atoi(string(m[2]))
		if granted := e.obs.count(gate.Success); granted != 40 {
			t.Fatalf("-throttle=%s: the gate saw %d successes, want 40", throttle, granted)
		}
		if (throttle == "true") != (dropped > 0) {
			t.Errorf("-throttle=%s: %d asks dropped locally", throttle, dropped)
		}
		asks[throttle] = sent
		t.Logf("-throttle=%s: %d asks sent, %d dropped locally", throttle, sent, dropped)
	}
	if asks["true"]*2 > asks["false"] {
		t.Errorf("the pool asked sluice %d times with its throttle and %d without: want at most half", asks["true"], asks["false"])
	}
}

// TestKilledProcessSlotsReturnAtLeaseExpiry kills, with SIGKILL, a client
// process that holds permits: its slots return when its leases expire.
func TestKilledProcessSlotsReturnAtLeaseExpiry(t *testing.T) {
	bin := buildExample(t)
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			e := newEnv(t, jobs(4), permit.Params{Leases: permit.Leases{Default: 20 * time.Second}})
			s := serve(t, e.svc, "tcp")
			tokenFile := filepath.Join(t.TempDir(), "token")
			writeFile(t, tokenFile, testToken+"\n")
			cmd := exec.Command(bin, "-addr", s.addr, "-token-file", tokenFile, "-transport", tr, "-group", "jobs", "-hold", "4")
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || strings.TrimSpace(line) != "holding 4 permits" {
				cmd.Process.Kill()
				t.Fatalf("example -hold: %q %v", line, err)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if n := e.inFlight(t, "jobs"); n != 4 {
				t.Fatalf("in flight %d after the kill, want 4: the leases still hold", n)
			}
			e.clock.Advance(20*time.Second - time.Millisecond)
			if n := e.svc.Sweep(e.clock.Now()); n != 0 {
				t.Fatalf("Sweep before the leases' end took %d", n)
			}
			if n := e.svc.Sweep(e.clock.Advance(time.Millisecond)); n != 4 || e.inFlight(t, "jobs") != 0 {
				t.Fatalf("Sweep at the leases' end took %d, in flight %d; want 4, 0", n, e.inFlight(t, "jobs"))
			}
			if n := e.obs.count(gate.Ignored); n != 4 || e.obs.count(gate.Dropped) != 0 {
				t.Fatalf("the gate saw %d ignored, %d drops; want 4 ignored: an expiry is no drop of the service", n, e.obs.count(gate.Dropped))
			}
		})
	}
}

// TestKilledHolderDoesNotCollapseTheLimit (issue 24, item 4): three leases
// that expire after their holder, a process, is killed with SIGKILL are no
// drops of the service's: the group's law (aimd, which backs off on any
// drop) keeps its limit of 64. They were reported as dropped, and took a
// group's limit from 64 to 2.
func TestKilledHolderDoesNotCollapseTheLimit(t *testing.T) {
	bin := buildExample(t)
	e := newEnv(t, `
[[group]]
name = "jobs"
  [group.concurrency]
  law = "aimd"
  initial = 64
  min = 1
  max = 100
`, permit.Params{Leases: permit.Leases{Default: 20 * time.Second}})
	s := serve(t, e.svc, "unix")
	cmd := exec.Command(bin, "-addr", s.addr, "-group", "jobs", "-hold", "3")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "holding 3 permits" {
		cmd.Process.Kill()
		t.Fatalf("example -hold: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if n := e.svc.Sweep(e.clock.Advance(20 * time.Second)); n != 3 {
		t.Fatalf("Sweep at the leases' end took %d, want 3", n)
	}
	for range 4 {
		e.gate.Tick(e.gclk.Advance(time.Second))
	}
	st, _ := e.gate.Group("jobs")
	if st.Limit < 64 {
		t.Fatalf("limit %d after three expired leases of a killed holder, want at least 64 (%v)", st.Limit, st.Decision.Reason)
	}
}
