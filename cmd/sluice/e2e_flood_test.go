package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/h2raw"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// TestFrontsAllocateNothingWithoutTheToken floods the real binary's rate
// limit service and permit service, both on TCP with a token, with streams
// and connections without it (h2raw.Flood): with 1,002 connections open,
// the process has at most 2 goroutines more per connection and at most
// 20 MB more of RSS (issue 23, item 3; not measured under the race
// detector), as its /metrics report them.
func TestFrontsAllocateNothingWithoutTheToken(t *testing.T) {
	for _, f := range []struct{ name, config, line, method string }{
		{"rls", rlsConfig, "Envoy rate limit service (rate quotas only)", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"},
		{"permit", permitTCPConfig, "permit service (HTTP/JSON and gRPC)", permitpb.Permits_Session_FullMethodName},
	} {
		t.Run(f.name, func(t *testing.T) {
			d := startFronts(t, f.config, f.line) // the configs listen on port 0 themselves
			usage := func() h2raw.Usage {
				u := h2raw.Usage{Goroutines: int(d.metric(t, "go_goroutines")), Bytes: int64(d.metric(t, "process_resident_memory_bytes"))}
				if raceEnabled {
					u.Bytes = -1
				}
				return u
			}
			h2raw.Flood(t, "tcp", d.front, f.method, rlsToken, usage)
		})
	}
}

// permitTCPConfig is permitConfig's permit service on loopback, with the
// token of the file startFronts writes.
var permitTCPConfig = strings.Replace(permitConfig, `listen = "unix://DIR/permit.sock"`,
	`listen = "127.0.0.1:0"`+"\n"+`token_file = "DIR/rls-token"`, 1)
