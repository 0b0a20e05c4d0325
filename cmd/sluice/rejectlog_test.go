package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// TestLogRejections: one line a period for a group that rejected requests,
// with the count since the last line and the key rejected most; the first
// line counts every rejection since the start (issue 28: it skipped the
// first period); nothing for a period without rejections. With
// the rate rule in shadow, the same line counts the would-be rejections
// ("shadow mode would reject"), and no "rejecting" line comes.
func TestLogRejections(t *testing.T) {
	for _, c := range []struct{ mode, msg, count string }{
		{"enforce", "rejecting", "rejected"},
		{"shadow", "shadow mode would reject", "would_reject"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			cfg, err := configs.Parse("t.toml", []byte(`
[upstream]
url = "http://127.0.0.1:9"
[[group]]
name = "api"
key = "header:X-Tenant"
  [group.rate]
  rate = 0.001
  burst = 1
  mode = "`+c.mode+`"
  [group.concurrency]
  law = "fixed"
  limit = 100
`))
			if err != nil {
				t.Fatal(err)
			}
			g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
			if err != nil {
				t.Fatal(err)
			}
			send := func(tenant string, n int) {
				for range n {
					r, _ := http.NewRequest(http.MethodGet, "http://sluice/", nil)
					r.Header.Set("X-Tenant", tenant)
					if p, _, ok := g.Enter(r); ok {
						p.Done(gate.Success)
					}
				}
			}
			var buf bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true, Level: hclog.Info})
			rl := rejectionLog{gate: g, log: log}
			send("greedy", 3) // 2 refused before the first period
			rl.period()       // one line: 2, all since the start
			send("greedy", 6) // 6 more
			send("calm", 2)   // 1
			rl.period()       // one line: 7
			rl.period()       // nothing new: no line

			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
			}
			for i, want := range []struct{ n, recent float64 }{{2, 2}, {7, 8}} {
				var rec map[string]any
				if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
					t.Fatal(err)
				}
				if rec["@message"] != c.msg || rec["group"] != "api" || rec[c.count] != want.n || rec["top_key"] != "greedy" ||
					rec["top_key_reason"] != "rate" || rec["top_key_recent"] != want.recent {
					t.Errorf("line %d %v, want %q with %s %v and the top key greedy (%v, rate)", i+1, rec, c.msg, c.count, want.n, want.recent)
				}
			}
		})
	}
}
