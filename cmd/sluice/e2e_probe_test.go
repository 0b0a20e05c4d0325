package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/probe"
)

// TestE2EProbeSources runs the binary watching a service by probe.pid_file:
// the startup log, /v1/status and `sluice status` all say that the CPU and
// memory the targets steer on are the service's (its cgroup's, or its
// process's where its cgroup has no limit), never the host's.
func TestE2EProbeSources(t *testing.T) {
	up := startUpstream(t)
	dir := t.TempDir()
	svc := exec.Command("sleep", "600") // the guarded service: any process
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Process.Kill(); svc.Wait() })
	pid := strconv.Itoa(svc.Process.Pid)
	pidFile := filepath.Join(dir, "app.pid")
	if err := os.WriteFile(pidFile, []byte(pid+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := prelude + `
[probe]
pid_file = "` + pidFile + `"
[[group]]
name = "api"
  [group.concurrency]
  law = "fixed"
  limit = 10
  [group.targets]
  cpu = 0.99
  memory = 0.99
`
	s := startSluice(t, writeConfig(t, dir, up.url, config))
	isService := func(source string) bool {
		return strings.HasPrefix(source, "process "+pid+" ") || strings.HasPrefix(source, "cgroup ")
	}
	for _, sig := range []string{"cpu", "memory"} {
		rec := s.log.wait(t, "the "+sig+" source line", message(sig))
		if src := str(rec["source"]); !isService(src) {
			t.Errorf("startup log: %s source %q, want process %s or its cgroup", sig, src, pid)
		}
	}
	rec := s.log.wait(t, "the cpu pressure source line", message("cpu pressure"))
	t.Logf("cpu pressure: %s", str(rec["source"]))
	admin := "http://" + str(s.log.wait(t, "the admin line", message("admin API, metrics and dashboard"))["addr"])

	// The first tick samples the resources; ask until it has.
	c := client(t)
	var st struct {
		Control struct {
			Ticks int `json:"ticks"`
		} `json:"control"`
		Resources struct {
			CPUFrom    string `json:"cpu_from"`
			CPUSource  string `json:"cpu_source"`
			MemoryFrom string `json:"memory_from"`
			Process    struct {
				PID int `json:"pid"`
			} `json:"process"`
		} `json:"resources"`
	}
	for deadline := time.Now().Add(waitLimit); st.Control.Ticks == 0; {
		r := do(c, "GET", admin+"/v1/status")
		if r.status != 200 || json.Unmarshal([]byte(r.body), &st) != nil || time.Now().After(deadline) && st.Control.Ticks == 0 {
			t.Fatalf("GET /v1/status: %d %s", r.status, r.body)
		}
	}
	res := st.Resources
	for name, from := range map[string]string{"cpu_from": res.CPUFrom, "memory_from": res.MemoryFrom} {
		if from != probe.FromProcess && from != probe.FromCgroup {
			t.Errorf("%s = %q, want process or cgroup", name, from)
		}
	}
	if !isService(res.CPUSource) || strconv.Itoa(res.Process.PID) != pid {
		t.Errorf("cpu_source %q, process %d; want the service %s", res.CPUSource, res.Process.PID, pid)
	}

	code, out, errOut := runArgs("status", "-admin", admin)
	if code != exitOK {
		t.Fatalf("sluice status: %d %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[1], "cpu ") || !strings.Contains(lines[1], " · "+res.CPUSource) || !strings.HasPrefix(lines[2], "memory ") {
		t.Errorf("sluice status:\n%s", out)
	}
	if strings.Contains(s.log.String(), "switched off") {
		t.Errorf("a target was switched off though the service has a source:\n%s", s.log)
	}
}

// TestE2EProbeNoSource runs the binary with the embedded default's CPU and
// memory targets and no [probe] settings: where sluice's cgroup carries no
// limit (as on the build machine), each target whose signal has no source
// gets one warn line that says why, and the daemon runs; where it does, no
// such line. The sampler in this test process, a child of the same cgroups,
// tells which.
func TestE2EProbeNoSource(t *testing.T) {
	up := startUpstream(t)
	s := startSluice(t, writeConfig(t, "", up.url, prelude+`
[[group]]
name = "api"
  [group.targets]
  cpu = 0.8
  memory = 0.85
`))
	sm, err := probe.NewSampler(probe.SamplerParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	src := sm.Sources()
	for _, c := range []struct {
		name string
		src  probe.Source
	}{{"cpu", src.CPU}, {"memory", src.Memory}} {
		rec := s.log.wait(t, "the "+c.name+" source line", message(c.name))
		if got := str(rec["source"]); got != c.src.Text {
			t.Errorf("%s source %q, want %q", c.name, got, c.src.Text)
		}
		if c.src.Usable() {
			continue
		}
		rec = s.log.wait(t, "the warning for the "+c.name+" target", message("target "+c.name+" switched off: its signal has no source", "groups", "api"))
		if rec["@level"] != "warn" || "none: "+str(rec["why"]) != c.src.Text {
			t.Errorf("warning %v, want level warn and why %q", rec, c.src.Text)
		}
	}
	if r := do(client(t), "GET", s.url("/")); r.status != 200 {
		t.Errorf("through sluice: %d %v", r.status, r.err)
	}
	if n := strings.Count(s.log.String(), "switched off"); n > 2 {
		t.Errorf("%d switched-off lines, want one per target at most:\n%s", n, s.log)
	}
}
