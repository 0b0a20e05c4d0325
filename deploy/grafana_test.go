package deploy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// grafanaExprs returns every PromQL expression of the shipped Grafana
// dashboard (panel queries, those of collapsed rows, template variables'
// label_values queries excepted: they are Grafana's, not PromQL), with the
// panel title each belongs to.
func grafanaExprs(t *testing.T) map[string][]string {
	t.Helper()
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(readFile(t, "../configs/grafana-dashboard.json"), &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaVars are the dashboard's variables as a query would be sent: the
// rate interval Grafana substitutes, and the variables inside label matchers.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*", "$group", ".*")

// TestGrafanaExpressionsParse parses every query of the dashboard with
// Prometheus's own PromQL parser, and checks that each selector names a
// sluice metric and that a histogram_quantile reads a _bucket series.
func TestGrafanaExpressionsParse(t *testing.T) {
	promql := parser.NewParser(parser.Options{})
	exprs := grafanaExprs(t)
	if len(exprs) == 0 {
		t.Fatal("no queries in the dashboard")
	}
	n := 0
	for title, list := range exprs {
		for _, e := range list {
			n++
			expr, err := promql.ParseExpr(grafanaVars.Replace(e))
			if err != nil {
				t.Errorf("panel %q: %v\n\t%s", title, err, e)
				continue
			}
			parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
				switch v := node.(type) {
				case *parser.VectorSelector:
					if !strings.HasPrefix(v.Name, "sluice_") {
						t.Errorf("panel %q: selector %q names no sluice metric", title, v.String())
					}
				case *parser.Call:
					if v.Func.Name == "histogram_quantile" && !strings.Contains(v.Args[1].String(), "_bucket") {
						t.Errorf("panel %q: histogram_quantile over %s, not a _bucket series", title, v.Args[1])
					}
				}
				return nil
			})
		}
	}
	if n < 20 {
		t.Errorf("%d queries parsed; the dashboard has more", n)
	}
}
