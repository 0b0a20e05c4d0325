package configs

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

// TestExamplesAreValid loads every example an operator may copy, and checks
// that its effective rendering parses back to the same config.
func TestExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("examples/*.toml")
	if len(files) < 4 {
		t.Fatalf("examples: %v, want sidecar, tenants, grpc and host at least", files)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			c, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c)
		})
	}
}

// TestDefaultIsValid checks the embedded default: valid, and the sidecar
// the documentation promises.
func TestDefaultIsValid(t *testing.T) {
	if _, err := Parse("default.toml", DefaultFile()); err != nil {
		t.Fatal(err)
	}
	c := Default()
	if c.Server.Listen != "127.0.0.1:8080" || c.Upstream.URL != "http://127.0.0.1:9000" || c.Admin.Listen != "127.0.0.1:9901" {
		t.Errorf("default listens on %q for %q, admin %q", c.Server.Listen, c.Upstream.URL, c.Admin.Listen)
	}
	if len(c.Groups) != 1 {
		t.Fatalf("default has groups %v, want one", groupNames(c))
	}
	g := c.Groups[0]
	want := spec.Targets{Latency: 200 * time.Millisecond, Quantile: 0.99, Memory: 0.85}
	if !g.Match.CatchAll() || g.Concurrency.Law != spec.LawTarget || g.Targets != want {
		t.Errorf("default group = %+v", g)
	}
	roundTrip(t, c)

	// Each call is a copy: changing one changes nothing for the next.
	c.Groups[0].Targets.Memory = 0.1
	if Default().Groups[0].Targets.Memory != 0.85 {
		t.Error("Default returns a shared config")
	}
	b := DefaultFile()
	b[0] = '!'
	if bytes.Equal(b, DefaultFile()) {
		t.Error("DefaultFile returns shared bytes")
	}
}
