package admin

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// grafanaFile is the Grafana dashboard shipped in configs/.
const grafanaFile = "../configs/grafana-dashboard.json"

type grafanaPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // of a collapsed row
}

// TestGrafanaDashboardNamesExportedMetrics checks every query of the
// Grafana dashboard against the metrics admin exports, so neither can drift
// from the other, and that it has the panels of the live page.
func TestGrafanaDashboardNamesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title      string         `json:"title"`
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q uid %q", d.Title, d.UID)
	}

	var exprs []string
	titles := map[string]bool{}
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			titles[p.Title] = true
			if p.GridPos.X < 0 || p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: gridPos %+v off the 24 columns", p.Title, p.GridPos)
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}

	names := exported(t)
	metric := regexp.MustCompile(`\bsluice_[a-z0-9_]+`)
	for _, e := range exprs {
		found := metric.FindAllString(e, -1)
		if len(found) == 0 {
			t.Errorf("query names no sluice metric: %s", e)
		}
		for _, m := range found {
			if !names[m] {
				t.Errorf("query names %s, which admin does not export: %s", m, e)
			}
		}
	}
	for _, want := range []string{"Concurrency limit vs in flight", "Latency vs target", "Throughput",
		"Rejections by reason", "CPU vs target", "Memory vs target"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
}
