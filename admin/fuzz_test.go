package admin

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
)

// FuzzDecodePatch feeds PATCH bodies to the decoder and, when it accepts
// one, to the gate's Override, as the handler does. Neither may panic; a
// body the decoder accepts changes only what may change at runtime, so the
// gate refuses it, if at all, only for the config's rules (a configs.Errors),
// never as a structural change; and a refusal names a field.
func FuzzDecodePatch(f *testing.F) {
	for _, seed := range []string{
		`{"targets": {"latency": "150ms"}}`,
		`{"targets": {"latency": "150ms", "quantile": 0.95, "cpu": 0.7, "memory": 0.9}, "keep_on_reload": true}`,
		`{"concurrency": {"min": 2, "max": 5}}`,
		`{"concurrency": {"max": 5, "initial": 8}}`,
		`{"concurrency": {"min": 50, "max": 20}}`,
		`{"concurrency": {"law": "fixed", "limit": 3}}`,
		`{"rate": {"rate": 50, "burst": 10}}`,
		`{"rate": {"algorithm": "fixed_window"}}`,
		`{"queue": {"order": "lifo", "max": 0}}`,
		`{"queue": {"max_wait": "1h", "codel_target": "-5ms"}}`,
		`{"targets": {"latency": 150}}`,
		`{"targets": {"latency": null}}`,
		`{"match": {"path": "/x"}, "name": "other"}`,
		`{"targets": {"latncy": "1s"}}`,
		`{"keep_on_reload": "yes"}`,
		`{"concurrency": {"max": 1e300}}`,
		`{"concurrency": {"max": -1}}`,
		`{"targets": {"cpu": "NaN"}}`,
		`{"targets": {"latency": "9223372036854775807ns"}}`,
		`{"targets": {"quantile": 1e-320}}`,
		`{"targets": 5}`,
		`{"targets": {"latency": "1s"}} {}`,
		`{"targets": {"latency": "1s", "latency": "2s"}}`,
		`{}`, `[]`, `null`, `"x"`, ``, `{`, "{\"targets\": {\"latency\": \"\xff\"}}",
	} {
		f.Add([]byte(seed))
	}
	cfg := parseConfig(f, testConfig)
	g, err := gate.New(gate.Params{Config: cfg.Gate(), Resources: gate.NoResources})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		effective := cfg.Clone()
		for i, gc := range g.Config().Groups {
			effective.Groups[i] = gc.Clone()
		}
		cur := effective.Group("api")
		p, aerr := decodePatch(cur, body)
		if aerr != nil {
			if aerr.status != 400 || aerr.Message == "" || !strings.HasPrefix(aerr.Message, "admin: ") {
				t.Fatalf("refusal %d %q", aerr.status, aerr.Message)
			}
			for _, pr := range aerr.Problems {
				if pr.Field == "" && !strings.Contains(pr.Error, `""`) || pr.Error == "" {
					t.Fatalf("a problem without a field or a message: %+v", pr)
				}
			}
			return
		}
		again, aerr := decodePatch(cur, body)
		if aerr != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("decoding twice differs: %+v vs %+v (%v)", again.group, p.group, aerr)
		}
		if p.group.Name != cur.Name || !reflect.DeepEqual(p.group.Match, cur.Match) || p.group.Key != cur.Key ||
			p.group.Concurrency.Law != cur.Concurrency.Law || p.group.Rate.Algorithm != cur.Rate.Algorithm {
			t.Fatalf("the body changed a structural field: %+v", p.group)
		}
		next, err := effective.ReplaceGroup(p.group)
		if err == nil {
			if err := g.Override(next.Group("api").Clone()); err != nil {
				t.Fatalf("the gate refused what the config's rules accept: %v", err)
			}
			return
		}
		var ce configs.Errors
		if !errors.As(err, &ce) {
			t.Fatalf("an accepted body refused for another reason than the config's rules: %v", err)
		}
		if e := overrideError("api", err); e.status != 422 || len(e.Problems) == 0 || e.Problems[0].Field == "" {
			t.Fatalf("answer to %v: %+v", err, e)
		}
	})
}
