package admin

import (
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
)

// TestChangesReported: every runtime change through the API reaches
// OnChange once, with who asked and each field's value before and after
// (issue 28: a PATCH, a mode switch above all, left no trace in the log);
// a PATCH refused reports nothing. A reload's report names the caller and
// the fields it changed, a mode switch included.
func TestChangesReported(t *testing.T) {
	var mu sync.Mutex
	var got []Change
	var reloads []ReloadReport
	f := newFixture(t, testConfig, func(p *Params) {
		p.OnChange = func(c Change) { mu.Lock(); got = append(got, c); mu.Unlock() }
		p.OnReload = func(r ReloadReport, err error) {
			if err == nil {
				mu.Lock()
				reloads = append(reloads, r)
				mu.Unlock()
			}
		}
	})
	if a := f.patch(t, "api", `{"mode": "shadow", "targets": {"latency": "150ms"}, "keep_on_reload": true}`); a.status != 200 {
		t.Fatalf("PATCH api: %d %s", a.status, a.body)
	}
	if a := f.patch(t, "api", `{"concurrency": {"max": -1}}`); a.status != 422 {
		t.Fatalf("a bad PATCH: %d %s", a.status, a.body)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("%d changes reported, want 1: %+v", len(got), got)
	}
	c := got[0]
	mu.Unlock()
	want := []gate.FieldChange{{Path: "targets.latency", From: "200ms", To: "150ms"}, {Path: "mode", From: "enforce", To: "shadow"}}
	if c.Group != "api" || c.Request != "PATCH /v1/groups/api" || !strings.HasPrefix(c.By, "admin API from 127.0.0.1:") ||
		!reflect.DeepEqual(c.Fields, want) || !reflect.DeepEqual(c.Notes, []string{"kept on reload"}) {
		t.Errorf("change %+v, want group api, PATCH from 127.0.0.1, fields %+v, kept on reload", c, want)
	}
	if s := FormatChanges(c.Fields); s != "targets.latency 200ms→150ms, mode enforce→shadow" {
		t.Errorf("FormatChanges: %q", s)
	}

	// The file switches batch to shadow; api's override is kept.
	next := parseConfig(t, strings.Replace(testConfig, `name = "batch"`, `name = "batch"`+"\nmode = \"shadow\"", 1))
	f.setNext(next, nil)
	if a := f.do(t, req{method: http.MethodPost, path: "/v1/reload", token: testToken}); a.status != 200 {
		t.Fatalf("reload: %d %s", a.status, a.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reloads) != 1 {
		t.Fatalf("%d reloads reported, want 1", len(reloads))
	}
	r := reloads[0]
	wantR := []GroupFields{{"batch", []gate.FieldChange{{Path: "mode", From: "enforce", To: "shadow"}}}}
	if !strings.HasPrefix(r.By, "admin API from 127.0.0.1:") || !reflect.DeepEqual(r.Fields, wantR) {
		t.Errorf("reload by %q changed %+v, want the caller and %+v", r.By, r.Fields, wantR)
	}
}

// TestFieldChanges: leaves by key path, a table that comes or goes as one
// field.
func TestFieldChanges(t *testing.T) {
	cfg := parseConfig(t, testConfig)
	a, b := cfg.Groups[0].Clone(), cfg.Groups[0].Clone()
	b.Rate = nil
	b.Concurrency.Max = 50
	b.Match.Methods = []string{"GET"}
	b.Targets.Latency, b.Queue.MaxWait = time.Minute, 90*time.Second
	want := []gate.FieldChange{
		{Path: "match.methods", From: "[]", To: "[GET]"},
		{Path: "rate", From: "(set)", To: "(none)"},
		{Path: "concurrency.max", From: "100", To: "50"},
		{Path: "targets.latency", From: a.Targets.Latency.String(), To: "1m"}, // as the file spells it, not 1m0s
		{Path: "queue.max_wait", From: a.Queue.MaxWait.String(), To: "1m30s"},
	}
	if got := FieldChanges(&a, &b); !reflect.DeepEqual(got, want) {
		t.Errorf("FieldChanges:\n got %+v\nwant %+v", got, want)
	}
	if got := FieldChanges(&a, &a); len(got) != 0 {
		t.Errorf("FieldChanges of a group with itself: %+v", got)
	}
}
