//go:build !nodemo

package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/adaptive/sim"
	"github.com/sluicehq/sluice/cmd/internal/simulate"
)

// TestServiceQuantile: serviceQuantile gives the quantiles of each
// distribution in closed form where there is one, and agrees with the
// simulator's own service times: a service at a tenth of its capacity,
// where nothing waits, answers at p99 what serviceQuantile says, within
// the sampling error of 6000 requests.
func TestServiceQuantile(t *testing.T) {
	dur := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	for _, c := range []struct {
		d    sim.Dist
		q    float64
		want time.Duration
	}{
		{sim.Dist{Kind: sim.Exponential, Mean: 50 * time.Millisecond}, 0.99, dur(50 * math.Log(100))}, // 230ms
		{sim.Dist{Kind: sim.Exponential, Mean: 50 * time.Millisecond}, 0.5, dur(50 * math.Ln2)},
		{sim.Dist{Kind: sim.Lognormal, Mean: 40 * time.Millisecond}, 0.99, 40 * time.Millisecond}, // constant
		// Lognormal, σ = 0.5: exp(μ + σ z99), μ = ln 10ms − σ²/2, z99 = 2.3263.
		{sim.Dist{Kind: sim.Lognormal, Mean: 10 * time.Millisecond, Sigma: 0.5}, 0.99,
			dur(10 * math.Exp(0.5*2.326348-0.125))},
		// Bimodal without noise: 1 % slow is the p99's edge; 2 % slow puts p99 on the slow mode.
		{sim.Dist{Kind: sim.Bimodal, Fast: time.Millisecond, Slow: 100 * time.Millisecond, PSlow: 0.02}, 0.99, 100 * time.Millisecond},
		{sim.Dist{Kind: sim.Bimodal, Fast: time.Millisecond, Slow: 100 * time.Millisecond, PSlow: 0.005}, 0.99, time.Millisecond},
	} {
		got, ok := serviceQuantile(c.d, c.q)
		if !ok || math.Abs(float64(got-c.want)) > float64(c.want)/1000 {
			t.Errorf("serviceQuantile(%+v, %v) = %v %v, want %v", c.d, c.q, got, ok, c.want)
		}
	}

	config := writeConfig(t, "", "", `
[upstream]
url = "http://127.0.0.1:9000"
[[group]]
name = "all"
  [group.concurrency]
  law = "fixed"
  limit = 1000
  [group.targets]
  latency = "10s"
`)
	for _, dist := range []string{"exp", "const", "lognormal:0.5"} {
		code, out, errOut := runArgs("simulate", "-config", config, "-capacity", "1000", "-workers", "100", "-service-time", dist,
			"-load", "0.1x for 60s")
		if code != exitOK {
			t.Fatalf("%s: code %d, stderr %s", dist, code, errOut)
		}
		rows := tableRows(t, out, "phase")
		measured, err := time.ParseDuration(rows[0][6])
		if err != nil {
			t.Fatalf("%s: p99 %q: %v\n%s", dist, rows[0][6], err, out)
		}
		svc, _, err := simulate.ServiceOf(simulate.ServiceDesc{Capacity: 1000, Workers: 100, Shape: dist}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := serviceQuantile(svc.Dist, 0.99)
		if math.Abs(float64(measured-want)) > 0.1*float64(want)+float64(time.Millisecond) {
			t.Errorf("%s: the simulator's p99 at a tenth of capacity is %v, serviceQuantile says %v", dist, measured, want)
		}
	}
}

// TestSimulateWarnsOfAnUnreachableTarget: the embedded default's p99 of
// 200ms against an exponential service of mean 50ms (p99 230ms alone) is
// named as a target no limit meets; of mean 20ms (p99 92ms) it is not.
func TestSimulateWarnsOfAnUnreachableTarget(t *testing.T) {
	for latency, want := range map[string]bool{"50ms": true, "20ms": false} {
		code, out, errOut := runArgs("simulate", "-capacity", "800", "-mean", latency, "-load", "1x for 5s")
		if code != exitOK {
			t.Fatalf("code %d, stderr %s", code, errOut)
		}
		const warning = "warning: targets.latency 200ms at p99 is below the service's own p99, 230ms (its service time alone, before any wait)"
		if got := strings.Contains(out, warning); got != want {
			t.Errorf("-mean %s: warned %v, want %v:\n%s", latency, got, want, out)
		}
	}
}
