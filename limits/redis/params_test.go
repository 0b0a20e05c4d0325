package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limits"
)

func TestParamsValidate(t *testing.T) {
	good := Params{
		StoreParams:   StoreParams{Address: "127.0.0.1:6379"},
		LimiterParams: LimiterParams{Name: "api", Algorithm: TokenBucket, Rate: 100, Burst: 10},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("good params: %v", err)
	}
	cases := []struct {
		name   string
		change func(p *Params)
		want   []string // every problem reported, each a substring
	}{
		{"no address", func(p *Params) { p.Address = "" }, []string{"an address"}},
		{"both addresses", func(p *Params) { p.ClusterAddresses = []string{"a:1"} }, []string{"only one of"}},
		{"sentinels", func(p *Params) { p.Address, p.SentinelAddresses = "", []string{"s:1", "x"} }, []string{"sentinel address 1 must be host:port", "a master name go together"}},
		{"sentinel password", func(p *Params) { p.SentinelPassword = "x" }, []string{"needs sentinel addresses"}},
		{"sentinel password file", func(p *Params) { p.SentinelPasswordFile = "/f" }, []string{"needs sentinel addresses"}},
		{"sentinel passwords", func(p *Params) {
			p.Address, p.SentinelAddresses, p.MasterName, p.SentinelPassword, p.SentinelPasswordFile = "", []string{"s:1"}, "m", "x", "/f"
		}, []string{"sentinel password or sentinel password file, not both"}},
		{"sync", func(p *Params) { p.Sync = "eventual" }, []string{`sync must be "exact" or "leased", got "eventual"`}},
		{"lease without leased", func(p *Params) { p.Lease.Period = time.Second }, []string{"lease settings need sync \"leased\""}},
		{"leased sliding window", func(p *Params) {
			p.Algorithm, p.Rate, p.Burst, p.Limit, p.Window, p.Sync = SlidingWindow, 0, 0, 10, time.Second, limits.SyncLeased
		}, []string{`"sliding_window" cannot be leased`, `use sync "exact"`}},
		{"leased burst under a period", func(p *Params) {
			p.Sync, p.Rate, p.Burst, p.Lease = limits.SyncLeased, 2000, 100, LeaseParams{Period: 100 * time.Millisecond}
		}, []string{"token_bucket burst 100 is below rate × lease period (200)"}},
		{"leased window under a period", func(p *Params) {
			p.Algorithm, p.Rate, p.Burst, p.Limit, p.Window, p.Sync = FixedWindow, 0, 0, 10, 50*time.Millisecond, limits.SyncLeased
		}, []string{"fixed_window window 50ms is shorter than the lease period 100ms"}},
		{"lease params", func(p *Params) {
			p.Sync, p.Lease = limits.SyncLeased, LeaseParams{Period: time.Millisecond, TTL: time.Millisecond, MaxKeys: 5000}
		},
			[]string{"lease period must be from 10ms to 10s", "lease ttl must be from 3 periods", "lease max keys must be from 1 to 1024"}},
		{"bad address", func(p *Params) { p.Address = "localhost" }, []string{`address must be host:port, got "localhost"`}},
		{"bad port", func(p *Params) { p.Address = "h:99999" }, []string{"invalid port"}},
		{"cluster db", func(p *Params) { p.Address, p.ClusterAddresses, p.DB = "", []string{"a:1", "b"}, 2 },
			[]string{`cluster address 1 must be host:port`, "only db 0"}},
		{"timeout", func(p *Params) { p.Timeout = 2 * time.Second }, []string{"timeout must be from 1ms to 1s"}},
		{"fallback", func(p *Params) { p.Fallback = "maybe" }, []string{`fallback must be "local", "open" or "closed", got "maybe"`}},
		{"nodes", func(p *Params) { p.Nodes = -1 }, []string{"nodes must be"}},
		{"passwords", func(p *Params) { p.Password, p.PasswordFile = "x", "/f" }, []string{"password or password file"}},
		{"backoff", func(p *Params) { p.BackoffMin, p.BackoffMax = time.Second, time.Millisecond }, []string{"backoff max"}},
		{"name", func(p *Params) { p.Name = "a b" }, []string{"name must be"}},
		{"algorithm", func(p *Params) { p.Algorithm = "sliding_log" }, []string{`algorithm must be`}},
		{"rate and burst", func(p *Params) { p.Rate, p.Burst = 0, 0 }, []string{"rate must be in (0, 1e9]", "burst must be positive"}},
		{"bucket window", func(p *Params) { p.Limit, p.Window = 5, time.Second }, []string{"takes rate and burst"}},
		{"burst/rate", func(p *Params) { p.Rate, p.Burst = 0.001, 10_000 }, []string{"burst/rate must be at most 720h"}},
		{"window amounts", func(p *Params) { p.Algorithm = SlidingWindow }, []string{"limit must be from 1 to 999999999", "window must be from 1ms", "takes limit and window"}},
		{"window limit", func(p *Params) {
			p.Algorithm, p.Rate, p.Burst, p.Limit, p.Window = SlidingWindow, 0, 0, 1_000_000_000, time.Second
		}, []string{"limit must be from 1 to 999999999, got 1000000000"}},
		{"everything at once", func(p *Params) { p.Address, p.Timeout, p.Name, p.Rate = "", time.Hour, "", -1 },
			[]string{"an address", "timeout", "name", "rate"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := good
			c.change(&p)
			err := p.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "limits/redis: ") {
					t.Errorf("problem %q lacks the package prefix", line)
				}
			}
			if _, err := New(p); err == nil {
				t.Error("New accepted the params")
			}
		})
	}
}
