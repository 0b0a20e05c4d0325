package configs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/limits"
)

// wants returns the "# want: " lines of a test file: the exact problems,
// in order, that Parse must report for it.
func wants(data []byte) []string {
	var out []string
	for line := range strings.Lines(testText(data)) {
		if w, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "# want: "); ok {
			out = append(out, w)
		}
	}
	return out
}

// testText returns the text of a test file, decoding the files in UTF-16
// (with or without a byte order mark) that the encoding tests hold.
func testText(data []byte) string {
	rest, order := data, binary.ByteOrder(nil)
	switch {
	case bytes.HasPrefix(data, []byte("\xff\xfe")):
		rest, order = data[2:], binary.LittleEndian
	case bytes.HasPrefix(data, []byte("\xfe\xff")):
		rest, order = data[2:], binary.BigEndian
	case len(data) >= 2 && data[1] == 0:
		order = binary.LittleEndian
	case len(data) >= 2 && data[0] == 0:
		order = binary.BigEndian
	}
	if order == nil || bytes.IndexByte(rest, 0) < 0 { // UTF-8, maybe after a UTF-16 mark
		return string(data)
	}
	units := make([]uint16, len(rest)/2)
	for i := range units {
		units[i] = order.Uint16(rest[2*i:])
	}
	return string(utf16.Decode(units))
}

// TestInvalidFiles parses every file in testdata/invalid, without a file
// name so that messages start with "line N:", and compares the problems
// with the file's "# want:" lines, all of them, in order.
func TestInvalidFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.toml")
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := wants(data)
			if len(want) == 0 {
				t.Fatalf("%s has no # want: lines", file)
			}
			c, err := Parse("", data)
			var got Errors
			if !errors.As(err, &got) {
				t.Fatalf("Parse = %v, %v; want Errors", c, err)
			}
			if c != nil {
				t.Errorf("Parse returned a config with errors")
			}
			var gotLines []string
			for _, e := range got {
				gotLines = append(gotLines, e.Error())
			}
			if strings.Join(gotLines, "\n") != strings.Join(want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(gotLines, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// validChecks say what each file in testdata/valid decodes to.
var validChecks = map[string]func(t *testing.T, c *Config){
	"minimal.toml": func(t *testing.T, c *Config) {
		if len(c.Groups) != 1 || c.Groups[0].Name != CatchAllName || !c.Groups[0].Match.CatchAll() {
			t.Errorf("groups = %+v, want the catch-all group only", c.Groups)
		}
		if c.Server.Listen != "127.0.0.1:8080" || c.Admin.Listen != "127.0.0.1:9901" || !c.Server.H2C {
			t.Errorf("server/admin defaults: %+v %+v", c.Server, c.Admin)
		}
		if time.Duration(c.Control.Interval) != 250*time.Millisecond || c.Redis != nil {
			t.Errorf("control %+v, redis %v", c.Control, c.Redis)
		}
	},
	"unix_sockets.toml": func(t *testing.T, c *Config) {
		if c.Upstream.URL != "unix:///run/app/app.sock" || c.Upstream.Protocol != ProtocolHTTP1 {
			t.Errorf("upstream = %+v", c.Upstream)
		}
	},
	"own_catch_all.toml": func(t *testing.T, c *Config) {
		if len(c.Groups) != 2 || c.Groups[1].Name != "rest" {
			t.Errorf("groups = %v, want api and rest only", groupNames(c))
		}
	},
	"inline_groups.toml": func(t *testing.T, c *Config) {
		if got := groupNames(c); !slices.Equal(got, []string{"a", "b", CatchAllName}) {
			t.Fatalf("groups = %v", got)
		}
		a, b := c.Groups[0], c.Groups[1]
		if !slices.Equal(a.Match.Methods, []string{"GET", "POST"}) || a.Concurrency.Law != spec.LawAIMD || a.Concurrency.Backoff != 0.9 {
			t.Errorf("group a = %+v", a)
		}
		if b.Match.Host != "api.example.com" || b.Match.Headers["X-Env"] != "canary" || b.Key != "header:X-User" {
			t.Errorf("group b = %+v", b)
		}
		if c.Server.Listen != "[::1]:8080" {
			t.Errorf("listen = %q", c.Server.Listen)
		}
	},
	"derived.toml": func(t *testing.T, c *Config) {
		big, small := c.Groups[0].Concurrency, c.Groups[1].Concurrency
		if big.Min != 2000 || big.Max != 2000 || big.Initial != 2000 {
			t.Errorf("min 2000 only: %+v, want initial = max = 2000", big)
		}
		if small.Min != 1 || small.Max != 5 || small.Initial != 5 {
			t.Errorf("max 5 only: %+v, want min 1, initial 5", small)
		}
		if g := c.Groups[1]; g.Priority != "header:X-Priority" || g.DefaultPriority != spec.LevelDefault {
			t.Errorf("priority %q, default %q", g.Priority, g.DefaultPriority)
		}
		if r := c.Groups[2].Rate; r.Buckets != 10 || r.MaxKeys != 100_000 || time.Duration(r.KeyIdleTimeout) != time.Hour {
			t.Errorf("sliding_buckets per ip: %+v, want 10 buckets, 100000 keys, idle 1h", r)
		}
		// 2.5 a second rounds up to a burst of 3; below the cost of 4 it is 4.
		if r := c.Groups[3].Rate; r.Burst != 4 || time.Duration(r.KeyIdleTimeout) != time.Minute {
			t.Errorf("token bucket: %+v, want burst 4, idle 1m", r)
		}
		if r := c.Groups[4].Rate; time.Duration(r.MaxWait) != 500*time.Millisecond || r.MaxKeys != 0 || r.Burst != 0 {
			t.Errorf("leaky_queue: %+v, want max_wait 500ms and no per-key bounds", r)
		}
	},
	"leased.toml": func(t *testing.T, c *Config) {
		if r := c.Redis; !slices.Equal(r.SentinelAddresses, []string{"127.0.0.1:26379", "127.0.0.1:26380"}) || r.MasterName != "quotas" ||
			r.SentinelPasswordFile != "/etc/sluice/sentinel-password" || r.PasswordFile != "" {
			t.Errorf("redis = %+v", r)
		}
		b, w, s := c.Groups[0].Rate, c.Groups[1].Rate, c.Groups[2].Rate
		if b.Sync != limits.SyncLeased || time.Duration(b.LeasePeriod) != 100*time.Millisecond || time.Duration(b.LeaseExpiry) != 2*time.Second || b.LeaseBound() != 300 {
			t.Errorf("leased bucket: %+v, bound %d; want 100ms, 2s, 1.5 × 2000/s × 100ms = 300", b, b.LeaseBound())
		}
		// 600 a minute is 10/s: 1.5 × 10/s × 1s.
		if w.Sync != limits.SyncLeased || time.Duration(w.LeaseExpiry) != 10*time.Second || w.LeaseBound() != 15 {
			t.Errorf("leased window: %+v, bound %d; want 10s, 15", w, w.LeaseBound())
		}
		if s.Sync != limits.SyncExact || s.LeasePeriod != 0 || s.LeaseBound() != 0 {
			t.Errorf("sliding window: %+v, want exact", s)
		}
	},
	"fronts.toml": func(t *testing.T, c *Config) {
		p := c.Permit
		if p == nil || p.Listen != "unix:///run/sluice/permit.sock" || p.SocketMode != 0o600 || p.MaxLeases != 1<<14 ||
			time.Duration(p.Lease) != 30*time.Second || len(p.Groups) != 1 || time.Duration(p.Groups[0].Lease) != 5*time.Minute {
			t.Errorf("permit = %+v, want the socket at 0o600, default lease and bound, jobs 5m", p)
		}
		r := c.RLS
		if r == nil || r.Listen != "127.0.0.1:8081" || r.SocketMode != 0o660 || r.Headers != RLSHeadersX || len(r.Domains) != 1 {
			t.Fatalf("rls = %+v, want TCP with a token, the default mode, x-ratelimit, one domain", r)
		}
		d := r.Domains[0].Descriptors
		if len(d) != 2 || d[0].Group != "per-client" || d[0].Entries[0] != (RLSEntry{Key: "remote_address"}) ||
			d[1].Entries[1] != (RLSEntry{Key: "header_match", Value: "premium"}) {
			t.Errorf("rls descriptors = %+v", d)
		}
	},
	"everything.toml": func(t *testing.T, c *Config) {
		if c.Redis == nil || len(c.Redis.ClusterAddresses) != 2 || c.Redis.Fallback != limits.FallbackClosed {
			t.Errorf("redis = %+v", c.Redis)
		}
		g := c.Groups[0]
		if g.Rate.Burst != 20 || g.Queue.Order != spec.OrderAdaptive || g.Targets.Quantile != 0.95 {
			t.Errorf("group api = %+v", g)
		}
		if s := c.Server; !slices.Equal(s.TrustedProxies, []string{"10.0.0.0/8", "fd00::/8", "192.0.2.7", "unix"}) || s.MaxConnections != 4096 {
			t.Errorf("server trusted_proxies %q, max_connections %d", s.TrustedProxies, s.MaxConnections)
		}
		if ci := c.Upstream.Circuit; ci.ConsecutiveFailures != 3 || ci.HalfOpenProbes != 2 || time.Duration(ci.OpenDuration) != 10*time.Second {
			t.Errorf("upstream.circuit = %+v", ci)
		}
	},
}

// TestValidFiles loads every file in testdata/valid, checks what
// validChecks says about it, and checks that its effective rendering parses
// back to the same config.
func TestValidFiles(t *testing.T) {
	checks := validChecks
	files, _ := filepath.Glob("testdata/valid/*.toml")
	if len(files) != len(checks) {
		t.Errorf("%d files, %d checks: give every valid file a check", len(files), len(checks))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			c, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if check := checks[filepath.Base(file)]; check != nil {
				check(t, c)
			}
			roundTrip(t, c)
		})
	}
}

// roundTrip checks that c renders to TOML that parses back to c.
func roundTrip(t *testing.T, c *Config) {
	t.Helper()
	out, err := c.Effective()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("effective", out)
	if err != nil {
		t.Fatalf("effective config does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(back.Clone(), c.Clone()) {
		t.Errorf("effective config parses to a different config:\n%s", out)
	}
}

func groupNames(c *Config) []string {
	var names []string
	for _, g := range c.Groups {
		names = append(names, g.Name)
	}
	return names
}
