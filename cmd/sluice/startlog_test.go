package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/probe"
)

// TestLogSources: one line per guarded signal saying where it comes from,
// and one warn line for each target that some group sets and whose signal
// has no source, naming the groups and saying why.
func TestLogSources(t *testing.T) {
	cfg, err := configs.Parse("sluice.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "api"
match = { path_prefix = "/api/" }
  [group.targets]
  cpu = 0.7
  memory = 0.9
[[group]]
name = "batch"
match = { path_prefix = "/batch/" }
  [group.targets]
  cpu = 0.5
  memory = 0.0
[[group]]
name = "rest"
  [group.targets]
  latency = "1s"
  cpu = 0.0
  memory = 0.0
`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Info})
	logSources(log, cfg, probe.Sources{
		CPU:         probe.Source{Text: "none: no CPU limit on sluice's cgroup /x or above"},
		Memory:      probe.Source{From: probe.FromCgroup, Text: "cgroup v2 /sys/fs/cgroup/x (working set of memory.max 1 GiB)"},
		CPUPressure: probe.Source{From: probe.FromCgroup, Text: "psi some avg10 of cgroup v2 /sys/fs/cgroup/x"},
	})
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		var kv []string
		for _, k := range []string{"source", "groups", "why"} {
			if v, ok := rec[k]; ok {
				kv = append(kv, k+"="+v.(string))
			}
		}
		got = append(got, rec["@level"].(string)+" "+rec["@message"].(string)+": "+strings.Join(kv, " "))
	}
	want := []string{
		"info cpu: source=none: no CPU limit on sluice's cgroup /x or above",
		"info memory: source=cgroup v2 /sys/fs/cgroup/x (working set of memory.max 1 GiB)",
		"info cpu pressure: source=psi some avg10 of cgroup v2 /sys/fs/cgroup/x",
		"warn target cpu switched off: its signal has no source: groups=api,batch why=no CPU limit on sluice's cgroup /x or above",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
