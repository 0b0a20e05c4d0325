package configs

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// fileOnly are the problems only a file can have, with why the gate has no
// such input: they are left out of TestBothDoorsRefuseAlike's comparison.
var fileOnly = []struct {
	path *regexp.Regexp // of the file's key path
	msg  string         // the start of the message
	why  string
}{
	{regexp.MustCompile(`^group\[\d+\]\.rate\.scope$`), `"global" keeps the quota in Redis`, "the gate is given Params.GlobalRate instead of [redis]"},
	{regexp.MustCompile(`^group\[\d+\]\.name$`), `"default" names the group for requests no other group matches`,
		"SetDefaults appends a catch-all; the gate reports the missing one itself"},
}

// sharedPath is the file's key of a problem of spec.Config's own fields, as
// the file spells it (written out here, apart from specPath).
var sharedPath = map[string]string{"interval": "control.interval", "save_interval": "control.save_interval", "trusted_proxies": "server.trusted_proxies"}

// TestBothDoorsRefuseAlike feeds every file of testdata/invalid to both
// doors: sluice check's (Parse) and the library's (gate.New, given the
// config as the file decodes, its values that failed to decode left at
// their defaults). Every problem Parse's validation finds in what the gate
// runs (the groups, control.interval and save_interval,
// server.trusted_proxies) gate.New reports too, at the same key path with
// the same message, and nothing else; and a file Parse finds nothing wrong
// with in those parts, gate.New accepts. Problems of decoding (unknown keys,
// wrong types, syntax) are not inputs the gate can be given.
func TestBothDoorsRefuseAlike(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.toml")
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	compared := 0
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			c, _, checked := parse("", data)
			if c == nil {
				return // not decoded at all: nothing to give the gate
			}
			var want []string
			for _, e := range checked {
				if gateRuns(e.Path) && !isFileOnly(e) {
					want = append(want, e.Path+": "+lineRef.ReplaceAllString(e.Msg, ""))
				}
			}

			_, err = gate.New(gate.Params{Config: c.Gate(), Resources: gate.NoResources, GlobalRate: localRate})
			var got []string
			var ps spec.Problems
			switch {
			case err == nil:
			case errors.As(err, &ps):
				for _, p := range ps {
					path := filePath(p)
					if c.src.isBad(path) || p.Incomplete && c.src.isIncomplete(path) || p.NoCatchAll() && !c.src.isIncomplete("group") && hasDefaultGroup(c) {
						continue // a stand-in for what failed to decode, or worded by the file (fileOnly)
					}
					if p.Other >= 0 && (c.src.isIncomplete(path) || c.src.isIncomplete(index("group", p.Other)+".match")) {
						continue
					}
					got = append(got, path+": "+p.Msg)
				}
			default:
				t.Fatalf("gate.New: %v, not the shared validation's problems", err)
			}
			if !strings.HasPrefix(errText(err), "gate: ") || strings.Contains(strings.TrimPrefix(errText(err), "gate: "), "gate: ") {
				t.Errorf("gate.New's error is not prefixed once: %v", err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("gate.New refused\n  %s\nsluice check refused\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if len(want) > 0 {
				compared++
			}
		})
	}
	if compared < 15 {
		t.Errorf("only %d files have problems in what the gate runs: the comparison proves little", compared)
	}
}

// lineRef is the line a file's message adds to a group it names.
var lineRef = regexp.MustCompile(` \(line \d+\)$`)

// gateRuns reports whether a file's key path is in what the gate runs.
func gateRuns(path string) bool {
	if strings.HasPrefix(path, "group[") {
		return true
	}
	for _, f := range sharedPath {
		if path == f || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

func isFileOnly(e *Error) bool {
	for _, f := range fileOnly {
		if f.path.MatchString(e.Path) && strings.HasPrefix(e.Msg, f.msg) {
			return true
		}
	}
	return false
}

func hasDefaultGroup(c *Config) bool { return c.Group(CatchAllName) != nil }

// filePath is the file's key path of a problem gate.New reports.
func filePath(p spec.Problem) string {
	if p.Group >= 0 {
		return under(index("group", p.Group), p.Path)
	}
	head, rest, _ := strings.Cut(p.Path, "[")
	if f, ok := sharedPath[head]; ok {
		if rest != "" {
			return f + "[" + rest
		}
		return f
	}
	return p.Path
}

func errText(err error) string {
	if err == nil {
		return "gate: "
	}
	return err.Error()
}

// localRate stands for Params.GlobalRate: a local token bucket.
func localRate(g *gate.Group) (gate.RateLimiter, error) {
	l, err := limits.NewTokenBucket(limits.TokenBucketParams{Rate: g.Rate.PerSecond(), Burst: int64(max(g.Rate.Burst, 1))})
	if err != nil {
		return nil, err
	}
	return oneBucket{l}, nil
}

type oneBucket struct{ l limits.Limiter }

func (b oneBucket) AllowAt(_ string, now time.Time, n int64) limits.Result {
	return b.l.AllowAt(now, n)
}
func (b oneBucket) Policy() limits.Policy { return b.l.Policy() }
