package permitclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/permit/permitpb"
)

type httpTransport struct {
	base    string // "http://host:port"
	token   string
	session []string // the SessionHeader's value, shared by the requests
	// tr makes the calls itself: the API never redirects and sets no
	// cookie, so http.Client would only add a copy of every request's
	// header.
	tr *http.Transport
}

func newHTTP(network, address, session string, o Options) transport {
	d := net.Dialer{Timeout: o.DialTimeout}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, address)
		},
		MaxIdleConns:        o.MaxConns,
		MaxIdleConnsPerHost: o.MaxConns,
		MaxConnsPerHost:     o.MaxConns,
		IdleConnTimeout:     time.Minute,
	}
	host := address
	if network == "unix" {
		host = "permit" // any name: the dialer goes to the socket
	}
	return &httpTransport{base: "http://" + host, token: o.Token, session: []string{session}, tr: tr}
}

func (t *httpTransport) post(ctx context.Context, path string, in, out any) (int, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header[permitpb.SessionHeader] = t.session
	if t.token != "" {
		req.Header["Authorization"] = []string{"Bearer " + t.token}
	}
	resp, err := t.tr.RoundTrip(req)
	if err != nil {
		return 0, fmt.Errorf("permitclient: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, fmt.Errorf("permitclient: reading the answer: %w", err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return resp.StatusCode, fmt.Errorf("permitclient: %s: answer %d is not the JSON expected: %w", path, resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

type acquireBody struct {
	Group    string `json:"group"`
	Key      string `json:"key,omitempty"`
	Priority string `json:"priority,omitempty"`
	Cost     int64  `json:"cost,omitempty"`
	WaitMS   int64  `json:"wait_ms,omitempty"`
}

// acquireAnswer is a grant, a refusal or an error, as the status says.
type acquireAnswer struct {
	ID              string `json:"id"`
	Group           string `json:"group"`
	LeaseMS         int64  `json:"lease_ms"`
	Shadowed        string `json:"shadowed"`
	Reason          string `json:"reason"`
	Status          int    `json:"status"`
	RetryAfter      int64  `json:"retry_after_s"`
	RateLimitPolicy string `json:"ratelimit_policy"`
	RateLimit       string `json:"ratelimit"`
	Error           string `json:"error"`
}

func (t *httpTransport) acquire(ctx context.Context, r Request) (grant, error) {
	var a acquireAnswer
	code, err := t.post(ctx, "/v1/permits", acquireBody{r.Group, r.Key, r.Priority, r.Cost, r.Wait.Milliseconds()}, &a)
	if err != nil {
		return grant{}, err
	}
	switch {
	case code == http.StatusOK:
		id, err := strconv.ParseUint(a.ID, 16, 64)
		if err != nil || len(a.ID) != 16 {
			return grant{}, fmt.Errorf("permitclient: the grant's id %q is not 16 hexadecimal digits", a.ID)
		}
		return grant{id: id, group: a.Group, lease: time.Duration(a.LeaseMS) * time.Millisecond, shadowed: a.Shadowed}, nil
	case a.Reason != "" && (code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable):
		return grant{}, &RefusedError{Group: a.Group, Reason: a.Reason, Status: a.Status,
			RetryAfter: time.Duration(a.RetryAfter) * time.Second, RateLimitPolicy: a.RateLimitPolicy, RateLimit: a.RateLimit}
	}
	return grant{}, fmt.Errorf("permitclient: acquire: %d %s", code, a.Error)
}

type releaseBody struct {
	Outcome   string  `json:"outcome"`
	LatencyMS float64 `json:"latency_ms"`
	Cost      *int64  `json:"cost,omitempty"`
}

type releaseAnswer struct {
	Result string `json:"result"`
	Error  string `json:"error"`
}

// releaseTimeout bounds a release over HTTP, which has no keepalive to
// tell a dead connection.
const releaseTimeout = 10 * time.Second

func (t *httpTransport) release(id uint64, o Outcome, latency time.Duration, cost int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	var a releaseAnswer
	path := releasePath(id)
	body := releaseBody{Outcome: o.String(), LatencyMS: float64(latency) / float64(time.Millisecond)}
	if cost != noCost {
		body.Cost = &cost
	}
	code, err := t.post(ctx, path, body, &a)
	if err != nil {
		return err
	}
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusGone:
		return ErrExpired
	case code == http.StatusNotFound && a.Result == "unknown":
		return fmt.Errorf("%w: %s", ErrUnknown, a.Error)
	}
	return fmt.Errorf("permitclient: release: %d %s", code, a.Error)
}

// releasePath is the path of id's release: its 16 hexadecimal digits, as
// permit.ID.String writes them.
func releasePath(id uint64) string {
	const prefix, suffix = "/v1/permits/", "/release"
	b := make([]byte, 0, len(prefix)+16+len(suffix))
	b = append(b, prefix...)
	for i := 60; i >= 0; i -= 4 {
		b = append(b, "0123456789abcdef"[id>>i&0xf])
	}
	return string(append(b, suffix...))
}

func (t *httpTransport) close() error {
	t.tr.CloseIdleConnections()
	return nil
}
