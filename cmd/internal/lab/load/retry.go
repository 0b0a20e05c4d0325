package load

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/client"
)

// RetryMode is how a retrying client waits before trying again.
type RetryMode string

const (
	// Backoff waits Backoff·2^(n-1) with full jitter before retry n,
	// ignoring Retry-After: the impatient client.
	Backoff RetryMode = "backoff"
	// RetryAfter waits what the Retry-After header says (whole seconds or
	// an HTTP date), or falls back to Backoff when it is absent.
	RetryAfter RetryMode = "retry-after"
	// Immediate tries again at once, ignoring Retry-After: the client (or
	// the retrying proxy in front of it) of a retry storm.
	Immediate RetryMode = "immediate"
	// Client sends each request through package client, which retries
	// (up to Attempts times) within its retry budget, never before what a
	// refusal asks for, and drops requests locally by its adaptive
	// throttle: the clients of issue 26. Backoff is its backoff's base.
	Client RetryMode = "client"
)

// DefaultBackoff is a zero Retry.Backoff.
const DefaultBackoff = 10 * time.Millisecond

// Retry makes clients try again after a 429 or 503. The zero value never
// retries.
type Retry struct {
	Attempts int           `json:"attempts"`          // retries after the first try; 0: none
	Mode     RetryMode     `json:"mode,omitempty"`    // zero: Backoff
	Backoff  time.Duration `json:"backoff,omitempty"` // base of the exponential backoff; zero: DefaultBackoff
}

// Validate returns every problem with r.
func (r Retry) Validate() []error {
	var errs []error
	if r.Attempts < 0 || r.Attempts > 100 {
		errs = append(errs, fmt.Errorf("load: retry attempts must be in [0,100], got %d", r.Attempts))
	}
	switch r.Mode {
	case "", Backoff, RetryAfter, Immediate, Client:
	default:
		errs = append(errs, fmt.Errorf("load: retry mode must be %q, %q, %q or %q, got %q", Backoff, RetryAfter, Immediate, Client, r.Mode))
	}
	if r.Backoff < 0 || r.Backoff > time.Minute {
		errs = append(errs, fmt.Errorf("load: retry backoff must be in [0,1m], got %v", r.Backoff))
	}
	return errs
}

// retryable reports whether a response status is one a retrying client
// tries again.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// wait returns how long to wait before retry n (1-based) after a response
// with the given Retry-After header value, received at now; u in [0,1)
// is the jitter draw.
func (r Retry) wait(n int, retryAfter string, now time.Time, u float64) time.Duration {
	switch r.Mode {
	case Immediate:
		return 0
	case RetryAfter:
		if d, ok := client.ParseRetryAfter(retryAfter, now); ok {
			return d
		}
	}
	base := r.Backoff
	if base == 0 {
		base = DefaultBackoff
	}
	ceiling := base << min(n-1, 20)
	return time.Duration(u * float64(ceiling))
}
