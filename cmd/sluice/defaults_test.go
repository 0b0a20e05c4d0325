package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admin"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
	ilisten "github.com/sluicehq/sluice/internal/listen"
	"github.com/sluicehq/sluice/limits/redis"
	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/proxy/breaker"
	"github.com/sluicehq/sluice/rls"
)

// The facts of a default live in one place each: the admin address in
// configs.DefaultAdminListen, the figures that configs shares with the
// libraries it configures (the proxy, its breaker, limits/redis, permit) in
// internal/defaults. These tests tie every other mention to them
// (proxy's TestDefaultsAreTheDaemons ties proxy.Params and ServerParams).

// TestBreakerDefaults: [upstream.circuit]'s defaults, in the static default
// and in the embedded default config, are the proxy's own.
func TestBreakerDefaults(t *testing.T) {
	want := breaker.Default()
	want.Buckets = 0 // configs has no key for it: the proxy's default applies
	for name, c := range map[string]*configs.Config{"configs.New": configs.New(), "the embedded default": configs.Default()} {
		got, off := breakerParams(&c.Upstream.Circuit)
		if off || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: [upstream.circuit] maps to %+v (off %v), want breaker.Default %+v", name, got, off, want)
		}
	}
}

// TestLibraryDefaultsAreTheDaemons: what limits/redis, permit, rls, the
// front-ends' listener and gate/spec take for an unset parameter is what
// the daemon runs when its file leaves the key out.
func TestLibraryDefaultsAreTheDaemons(t *testing.T) {
	rd, pm, rl := configs.NewRedis(), configs.NewPermit(), configs.NewRLS()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"permit.listen: permit.DefaultListen", permit.DefaultListen, pm.Listen},
		{"rls.listen: rls.DefaultListen", rls.DefaultListen, rl.Listen},
		{"permit.socket_mode: internal/listen.DefaultSocketMode", ilisten.DefaultSocketMode, fs.FileMode(pm.SocketMode)},
		{"rls.socket_mode: internal/listen.DefaultSocketMode", ilisten.DefaultSocketMode, fs.FileMode(rl.SocketMode)},
		{"redis.timeout: limits/redis.DefaultTimeout", redis.DefaultTimeout, time.Duration(rd.Timeout)},
		{"redis.key_prefix: limits/redis.DefaultKeyPrefix", redis.DefaultKeyPrefix, rd.KeyPrefix},
		{"permit.lease: permit.DefaultLease", permit.DefaultLease, time.Duration(pm.Lease)},
		{"permit.max_leases: permit.DefaultMaxLeases", permit.DefaultMaxLeases, pm.MaxLeases},
		{"lease_period: limits/redis.DefaultLeasePeriod", redis.DefaultLeasePeriod, spec.DefaultLeasePeriod},
		{"lease_expiry: limits/redis.DefaultLeaseTTL", redis.DefaultLeaseTTL, spec.DefaultLeaseExpiry},
	} {
		if c.got != c.want {
			t.Errorf("%s is %v, the daemon's %v", c.name, c.got, c.want)
		}
	}
}

// TestAdminListenDefault: the admin API's default address is configs' in
// admin, in the embedded default config and in sluice status.
func TestAdminListenDefault(t *testing.T) {
	if admin.DefaultListen != configs.DefaultAdminListen {
		t.Errorf("admin.DefaultListen %q, configs.DefaultAdminListen %q", admin.DefaultListen, configs.DefaultAdminListen)
	}
	if got := configs.Default().Admin.Listen; got != configs.DefaultAdminListen {
		t.Errorf("the embedded default's admin.listen %q, want %q", got, configs.DefaultAdminListen)
	}
	// sluice status without -admin asks the default address (read from its
	// flags, not by asking it: whatever holds that port would answer).
	var a statusArgs
	if err := statusFlags(&a).Parse(nil); err != nil || a.admin != "http://"+configs.DefaultAdminListen {
		t.Errorf("status without -admin asks %q (%v), want http://%s", a.admin, err, configs.DefaultAdminListen)
	}
}

// TestAddressesInDocs: every loopback address the help texts, the README,
// the embedded default and configs' doc comments quote is a default of
// today's code (the admin API's, the proxy's, the embedded default's
// upstream) or a stated example, and the texts about the admin API's
// address quote configs.DefaultAdminListen.
func TestAddressesInDocs(t *testing.T) {
	up, err := url.Parse(configs.Default().Upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	known := []string{configs.DefaultAdminListen, configs.New().Server.Listen, up.Host,
		"127.0.0.1:7070"} // README: a permit service on TCP, an example
	texts := map[string]string{"sluice help": program.Intro}
	for _, c := range program.Commands {
		texts["sluice help "+c.Name] = c.Summary + "\n" + c.Usage
	}
	for _, f := range []string{"README.md", "configs/default.toml", "configs/config.go"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	addr := regexp.MustCompile(`(?:127\.0\.0\.1|localhost|\[::1\]):\d+`)
	for name, text := range texts {
		for _, a := range addr.FindAllString(text, -1) {
			if !slices.Contains(known, a) {
				t.Errorf("%s quotes %s, which is no default: admin %s, server %s, upstream %s", name, a,
					configs.DefaultAdminListen, configs.New().Server.Listen, up.Host)
			}
		}
	}
	for name, quote := range map[string]string{
		"sluice help status": "(default http://" + configs.DefaultAdminListen + ", admin.listen's default)",
		"sluice help demo":   "The dashboard listens on " + configs.DefaultAdminListen,
		"sluice help config": "the admin API on " + configs.DefaultAdminListen,
		"README.md":          "the admin API serves the live dashboard at http://" + configs.DefaultAdminListen + "/",
	} {
		if !strings.Contains(strings.Join(strings.Fields(texts[name]), " "), quote) {
			t.Errorf("%s does not say %q", name, quote)
		}
	}
}

// TestDefaultsInDocComments: the "Default X." of each field's doc comment
// in the breaker's params and configs' [upstream.circuit] and [admin] is
// the value the code defaults it to.
func TestDefaultsInDocComments(t *testing.T) {
	cfg := configs.New()
	for _, c := range []struct {
		file, typ string
		value     any
		want      int // how many fields quote a default
	}{
		{"proxy/breaker/breaker.go", "Params", breaker.Default(), 7},
		{"configs/config.go", "Circuit", cfg.Upstream.Circuit, 6},
		{"configs/config.go", "Admin", cfg.Admin, 1},
	} {
		docs := fieldDocs(t, filepath.Join("../..", c.file), c.typ)
		quote := regexp.MustCompile(`Default ("[^"]*"|\S+?)\.?(?:\s|$)`)
		n := 0
		v := reflect.ValueOf(c.value)
		for field, doc := range docs {
			m := quote.FindStringSubmatch(doc)
			if m == nil {
				continue
			}
			n++
			if got := defaultText(v.FieldByName(field)); got != m[1] {
				t.Errorf("%s: %s.%s's doc says Default %s, the code's default is %s", c.file, c.typ, field, m[1], got)
			}
		}
		if n != c.want {
			t.Errorf("%s: %d fields of %s quote a default, want %d", c.file, n, c.typ, c.want)
		}
	}
}

// fieldDocs is the doc comment of each field of the struct type named typ
// in file.
func fieldDocs(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range fl.Names {
				docs[name.Name] = fl.Doc.Text()
			}
		}
		return false
	})
	if len(docs) == 0 {
		t.Fatalf("%s: no struct type %s", file, typ)
	}
	return docs
}

// defaultText writes a default as the doc comments do.
func defaultText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return x.String()
	case configs.Duration:
		return x.String()
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	}
	return "(a " + v.Type().String() + ")"
}
