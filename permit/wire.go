package permit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/gate"
)

// The HTTP/JSON bodies. Field names are the protocol buffers' (permitpb).

type acquireJSON struct {
	Group    string `json:"group"`
	Key      string `json:"key"`
	Priority string `json:"priority"`
	Cost     int64  `json:"cost"`
	WaitMS   int64  `json:"wait_ms"`
}

type grantJSON struct {
	ID       string `json:"id"`
	Group    string `json:"group"`
	LeaseMS  int64  `json:"lease_ms"`
	Shadowed string `json:"shadowed,omitempty"`
}

// shadowedName is a grant's shadowed field: the would-be reason, "" for none.
func shadowedName(why adaptive.RejectReason) string {
	if why == adaptive.RejectNone {
		return ""
	}
	return why.String()
}

type releaseJSON struct {
	Outcome   string   `json:"outcome"`
	LatencyMS *float64 `json:"latency_ms"`
	// Cost is the work's real cost, known at its end (absent: the grant's
	// charge stands; see Service.ReleaseCostIn).
	Cost *int64 `json:"cost"`
}

type resultJSON struct {
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

type errorJSON struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// decodeStrict decodes one JSON object from b into v: unknown fields and
// anything after the object are errors naming what is wrong.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &FieldError{te.Field, fmt.Sprintf("want a JSON %s, got %s", te.Type, te.Value)}
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &FieldError{strings.Trim(f, `"`), "unknown field"}
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body, want a JSON object", ErrInvalid)
		}
		return fmt.Errorf("%w: body: %v", ErrInvalid, err)
	}
	if d.More() {
		return fmt.Errorf("%w: body: data after the JSON object", ErrInvalid)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("%w: body: data after the JSON object", ErrInvalid)
	}
	return nil
}

// ParsePriority reads a permit request's priority: a level name
// ("critical", "default", "sheddable", any case) or a level 0..7; "" is
// adaptive.Default.
func ParsePriority(s string) (adaptive.Priority, error) {
	if s == "" {
		return adaptive.Default, nil
	}
	p, ok := adaptive.ParsePriority(strings.ToLower(s))
	if !ok {
		return 0, &FieldError{"priority", fmt.Sprintf("%q: want critical, default, sheddable or a level 0..7", s)}
	}
	return p, nil
}

// parseAcquire reads the body of POST /v1/permits.
func parseAcquire(b []byte) (Request, error) {
	var a acquireJSON
	if err := decodeStrict(b, &a); err != nil {
		return Request{}, err
	}
	p, err := ParsePriority(a.Priority)
	if err != nil {
		return Request{}, err
	}
	if a.WaitMS < 0 || a.WaitMS > MaxWait.Milliseconds() {
		return Request{}, &FieldError{"wait_ms", fmt.Sprintf("%d: want between 0 and %d", a.WaitMS, MaxWait.Milliseconds())}
	}
	r := Request{Group: a.Group, Key: a.Key, Priority: p, Cost: a.Cost, Wait: time.Duration(a.WaitMS) * time.Millisecond}
	return r, r.validate()
}

// ParseOutcome reads an outcome's wire name: "success", "dropped" or
// "ignored".
func ParseOutcome(s string) (gate.Outcome, error) {
	for _, o := range [...]gate.Outcome{gate.Success, gate.Dropped, gate.Ignored} {
		if s == o.String() {
			return o, nil
		}
	}
	return 0, &FieldError{"outcome", fmt.Sprintf("%q: want success, dropped or ignored", s)}
}

// maxLatencyMS bounds a reported latency: a day.
const maxLatencyMS = 24 * 60 * 60 * 1000

// LatencyOf converts a latency in milliseconds, as the wire carries it,
// checking its range (0 to a day).
func LatencyOf(ms float64) (time.Duration, error) {
	if math.IsNaN(ms) || ms < 0 || ms > maxLatencyMS {
		return 0, &FieldError{"latency_ms", fmt.Sprintf("%v: want between 0 and %d", ms, maxLatencyMS)}
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// parseRelease reads the body of POST /v1/permits/{id}/release.
func parseRelease(b []byte) (o gate.Outcome, lat time.Duration, cost int64, err error) {
	var r releaseJSON
	if err := decodeStrict(b, &r); err != nil {
		return 0, 0, 0, err
	}
	if o, err = ParseOutcome(r.Outcome); err != nil {
		return 0, 0, 0, err
	}
	cost = NoCost
	if r.Cost != nil {
		if cost = *r.Cost; cost < 0 {
			return 0, 0, 0, &FieldError{"cost", fmt.Sprintf("%d: want 0 or more", cost)}
		}
	}
	if r.LatencyMS == nil {
		return o, Unmeasured, cost, nil
	}
	lat, err = LatencyOf(*r.LatencyMS)
	return o, lat, cost, err
}
