package gate

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// Middleware guards next with g, for a Go service that uses sluice as a
// library: each request goes through Enter; a rejected one gets
// Rejection.WriteResponse (429 or 503 with Retry-After, Sluice-Reason and the
// RateLimit fields) and never reaches next; an admitted one is served by next
// and its outcome is read from the status next writes: 1xx, 2xx and 3xx are
// Success (no status written counts as 200), 5xx Dropped, 4xx Ignored; a
// request whose client went away (its context ended) or whose handler panicked
// is Ignored. The panic is not recovered: it goes on to net/http.
//
// Paths are normalised first (NormalPath): one that NormalPath refuses (".."
// above the root, an encoded slash or a backslash, "/..;/") is answered 400
// and never reaches next; one that is not normal ("//a", "/./a", "/x/../a",
// "/%2e/a") is matched, and served by next, as its normal form, on a shallow
// copy of the request whose URL.Path, URL.RawPath and RequestURI say it. So
// next serves the path the request was counted under. A request whose
// class is ambiguous (Class.Err: its group's key header sent twice) is
// answered 400 too.
//
// Start g.Run beside it, or the limits never adapt.
//
// The response writer next sees is a pooled wrapper (no allocation per
// request) that passes Flush, Hijack, ReadFrom and http.ResponseController
// (Unwrap) through. As with any http.ResponseWriter, next must not use it
// after returning: the wrapper then serves another request.
func Middleware(g *Gate, next http.Handler) http.Handler {
	return &middleware{g: g, next: next}
}

type middleware struct {
	g    *Gate
	next http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw := RequestPath(r)
	forward, match, err := NormalPath(raw)
	if err != nil {
		http.Error(w, "400 Bad Request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if forward != raw {
		r = withPath(r, forward, match)
	}
	c := m.g.ClassifyPath(r, match)
	if err := c.Err(); err != nil {
		http.Error(w, "400 Bad Request: "+err.Error(), http.StatusBadRequest)
		return
	}
	pass, rej, ok := m.g.EnterClass(r.Context(), c)
	if !ok {
		rej.WriteResponse(w)
		return
	}
	sw := writers.Get().(*statusWriter)
	sw.w, sw.status = w, 0
	finished := false
	defer func() {
		if !finished { // next panicked
			pass.Done(Ignored)
		}
		sw.w = nil
		writers.Put(sw)
	}()
	m.next.ServeHTTP(sw, r)
	finished = true
	pass.Done(outcomeOf(sw.status, r.Context().Err() != nil))
}

// withPath returns a shallow copy of r whose path is the normalised one:
// forward escaped, match decoded (NormalPath's results).
func withPath(r *http.Request, forward, match string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath, u.Opaque = match, "", ""
	if forward != match {
		u.RawPath = forward
	}
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	return r2
}

// outcomeOf classifies a response by its status; gone reports that the
// client went away.
func outcomeOf(status int, gone bool) Outcome {
	switch {
	case gone:
		return Ignored
	case status >= 500:
		return Dropped
	case status >= 400:
		return Ignored
	}
	return Success
}

var writers = sync.Pool{New: func() any { return new(statusWriter) }}

// statusWriter records the final status a handler writes.
type statusWriter struct {
	w      http.ResponseWriter
	status int // 0 until a final status is written
}

func (s *statusWriter) Header() http.Header { return s.w.Header() }

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.w.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.w.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.w }

// Flush flushes the real writer when it can.
func (s *statusWriter) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over (a WebSocket upgrade): the request counts
// as a success.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.w.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("gate: the response writer cannot be hijacked")
	}
	c, rw, err := h.Hijack()
	if err == nil && s.status == 0 {
		s.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// ReadFrom keeps the real writer's sendfile path for io.Copy.
func (s *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if rf, ok := s.w.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{s.w}, r)
}

// writerOnly hides every method but Write, so io.Copy does not loop back into
// ReadFrom.
type writerOnly struct{ io.Writer }
