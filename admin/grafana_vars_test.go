package admin

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// TestGrafanaDashboardVariables checks that every ${name} the dashboard
// refers to is one of its template variables or import inputs, and that
// every import input is referred to: Grafana asks for each input on import,
// so an unused one is a question with no effect.
func TestGrafanaDashboardVariables(t *testing.T) {
	b, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Inputs []struct {
			Name string `json:"name"`
		} `json:"__inputs"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`).FindAllSubmatch(b, -1) {
		used[string(m[1])] = true
	}
	for _, in := range d.Inputs {
		if !used[in.Name] {
			t.Errorf("import input %s is never referred to", in.Name)
		}
		defined[in.Name] = true
	}
	for name := range used {
		if !defined[name] && name != "__interval" && name != "__rate_interval" {
			t.Errorf("${%s} is neither a template variable nor an input", name)
		}
	}
	if len(used) == 0 {
		t.Error("the dashboard refers to no variable: its panels would have no data source")
	}
}
