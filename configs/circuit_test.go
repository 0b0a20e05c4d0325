package configs

import (
	"testing"
	"time"
)

func TestCircuitDefaultsAndOff(t *testing.T) {
	c, err := Parse("", []byte("[upstream]\nurl = \"http://127.0.0.1:9000\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Circuit{FailureRatio: 0.5, MinRequests: 20, Window: Duration(10 * time.Second),
		ConsecutiveFailures: 5, OpenDuration: Duration(5 * time.Second), HalfOpenProbes: 3}
	if got := c.Upstream.Circuit; got != want || got.Off() {
		t.Errorf("default circuit %+v (off %v), want %+v", got, got.Off(), want)
	}

	c, err = Parse("", []byte(`[upstream]
url = "http://127.0.0.1:9000"
  [upstream.circuit]
  failure_ratio = 0
  consecutive_failures = 0
`))
	if err != nil {
		t.Fatalf("both triggers 0 (the breaker off) must be valid: %v", err)
	}
	if !c.Upstream.Circuit.Off() {
		t.Errorf("circuit %+v with both triggers 0 is not off", c.Upstream.Circuit)
	}
}
