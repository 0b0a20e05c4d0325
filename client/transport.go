package client

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Fields of the answer the Transport makes up for a request it dropped.
const (
	// HeaderDropped is set, to "throttled", on the synthetic 503 of a
	// request the throttle dropped: no byte of it left the process.
	HeaderDropped = "Sluice-Client"
	droppedValue  = "throttled"
)

// maxRefusalBody is what a Transport keeps of a refused answer's body while
// it waits to retry (the rest is discarded, and the connection closed).
const maxRefusalBody = 4 << 10

// Transport returns an http.RoundTripper that sends requests through base
// (nil: http.DefaultTransport) under c: each request is tagged (its
// missing tag headers set on a copy, never on the caller's request), passes
// the backend's throttle (its backend is the URL's host:port), is retried
// on a refusal or a failure when Idempotent, within the retry budget and
// after the backoff, and what it got is counted. A request the throttle
// drops gets a synthetic 503 whose HeaderDropped field is "throttled"
// (Dropped reports it) and whose body names the drop; nothing is sent.
//
// With its tags already on the request (or no Tags), a request that is not
// dropped costs no allocation of the Transport's. Safe for concurrent use.
func (c *Client) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

type transport struct {
	c    *Client
	base http.RoundTripper
	last atomic.Pointer[backend] // the backend of the latest request, looked at first
}

// backend returns the state of the request's backend.
func (t *transport) backend(req *http.Request) *backend {
	host := req.URL.Host
	if b := t.last.Load(); b != nil && b.name == host {
		return b
	}
	b := t.c.backend(host)
	t.last.Store(b)
	return b
}

// Dropped reports whether resp is the synthetic 503 of a request the
// Transport dropped.
func Dropped(resp *http.Response) bool {
	v := resp.Header[HeaderDropped]
	return len(v) > 0 && v[0] == droppedValue
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	ctx := req.Context()
	b := t.backend(req)
	req = c.tag(req)
	idempotent := Idempotent(req)
	var (
		// The previous attempt's answer, its body kept, for a retry that
		// does not happen after all.
		lastResp *http.Response
		lastErr  error
		kept     []byte
	)
	previous := func() (*http.Response, error) {
		if lastResp != nil {
			lastResp.Body = io.NopCloser(bytes.NewReader(kept))
		}
		return lastResp, lastErr
	}
	for n := 0; ; n++ {
		if err := c.admit(b, n); err != nil {
			if n > 0 {
				return previous()
			}
			closeBody(req)
			return dropResponse(req, err.(*DropError)), nil
		}
		send := req
		if n > 0 {
			var err error
			if send, err = rewound(req); err != nil {
				return previous()
			}
		}
		resp, err := t.base.RoundTrip(send)
		now := c.nanos()
		if err == nil && !refusal(resp.StatusCode) { // accepted: nothing more to read
			c.record(b, now, n, Accepted, "")
			return resp, nil
		}
		r := Result{Failed: err != nil}
		if err == nil {
			r = ResultOf(resp, c.timeAt(now))
		}
		o := outcomeOf(ctx, r, err)
		c.record(b, now, n, o, r.Reason)
		wait, retry := c.retryWait(ctx, b, now, n, idempotent, o, r)
		if !retry {
			return resp, err
		}
		lastResp, lastErr, kept = resp, err, nil
		if resp != nil {
			kept = drain(resp)
		}
		if c.cfg.Clock.Sleep(ctx, wait) != nil {
			return previous()
		}
	}
}

// tag returns req with the Client's tags (and its context's) on it: req
// itself when it carries them already, else a copy with its own header map.
func (c *Client) tag(req *http.Request) *http.Request {
	v := c.tagVals
	if o, ok := req.Context().Value(tagsKey{}).(Tags); ok {
		v = c.values(c.cfg.Tags.over(o))
	}
	if !v.missing(req.Header, c.cfg.Headers) {
		return req
	}
	r := new(http.Request)
	*r = *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = make(http.Header, 3)
	}
	v.set(r.Header, c.cfg.Headers)
	return r
}

// rewound returns a copy of req to send again, with a fresh body.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("client: the request's body cannot be read again")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := new(http.Request)
	*r = *req
	r.Body = body
	return r, nil
}

// drain reads what it keeps of a refusal's body and closes it.
func drain(resp *http.Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	resp.Body.Close()
	return b
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// dropResponse is the synthetic answer to a dropped request.
func dropResponse(req *http.Request, d *DropError) *http.Response {
	body := d.Error() + "\n"
	return &http.Response{
		Status:     "503 Service Unavailable",
		StatusCode: http.StatusServiceUnavailable,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{
			HeaderDropped:    {droppedValue},
			"Content-Type":   {"text/plain; charset=utf-8"},
			"Content-Length": {strconv.Itoa(len(body))},
		},
		Body:          io.NopCloser(bytes.NewReader([]byte(body))),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
