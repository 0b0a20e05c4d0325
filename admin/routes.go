package admin

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/internal/listen"
)

// access is what an operation asks of a request beyond a good Host.
type access uint8

const (
	public access = iota // nothing: health checks, the page (it holds no data)
	read                 // the token, off loopback
	mutate               // the token always, a JSON body within the size limit
)

// op is one method of an endpoint: who may call it, its handler, and what
// the OpenAPI document says of it.
type op struct {
	access access
	h      http.HandlerFunc
	doc    opDoc
}

// endpoint maps the methods a path takes to their operations. GET also
// answers HEAD.
type endpoint map[string]op

// route is one path of the API. Its pattern is net/http's ServeMux pattern
// and, but for "{$}", its path in the OpenAPI document.
type route struct {
	pattern string
	e       endpoint
}

func get(a access, h http.HandlerFunc, d opDoc) endpoint { return endpoint{http.MethodGet: {a, h, d}} }

// table is every route of the API: the one list that routes serves and
// the OpenAPI document (openapi.go) describes.
func (s *Server) table() []route {
	metrics := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
	// pprof's symbol lookup takes a POST of addresses (go tool pprof): a
	// read, not a mutation.
	prof := func(h http.HandlerFunc, d opDoc) endpoint {
		return endpoint{http.MethodGet: {read, h, d}, http.MethodPost: {read, h, d}}
	}
	return []route{
		{"/{$}", get(public, s.page, docPage)},
		{"/ui/{file}", get(public, s.asset, docAsset)},
		{"/livez", get(public, s.livez, docLivez)},
		{"/readyz", get(public, s.readyz, docReadyz)},
		{"/metrics", get(read, metrics.ServeHTTP, docMetrics)},
		{"/v1/openapi.json", get(public, s.getOpenAPI, docOpenAPI)},
		{"/v1/status", get(read, s.getStatus, docStatus)},
		{"/v1/groups", get(read, s.getGroups, docGroups)},
		{"/v1/groups/{name}", endpoint{
			http.MethodGet:   {read, s.getGroup, docGroup},
			http.MethodPatch: {mutate, s.patchGroup, docPatchGroup},
		}},
		{"/v1/groups/{name}/global", endpoint{
			http.MethodGet:    {read, s.getGlobal, docGlobal},
			http.MethodPatch:  {mutate, s.patchGlobal, docPatchGlobal},
			http.MethodDelete: {mutate, s.deleteGlobal, docDeleteGlobal},
		}},
		{"/v1/history", get(read, s.getHistory, docHistory)},
		{"/v1/reload", endpoint{http.MethodPost: {mutate, s.postReload, docReload}}},
		{"/debug/pprof/{$}", prof(pprof.Index, docPprofIndex)},
		{"/debug/pprof/{profile}", prof(pprof.Index, docPprofProfile)},
		{"/debug/pprof/cmdline", prof(pprof.Cmdline, docPprofCmdline)},
		{"/debug/pprof/profile", prof(pprof.Profile, docPprofCPU)},
		{"/debug/pprof/symbol", prof(pprof.Symbol, docPprofSymbol)},
		{"/debug/pprof/trace", prof(pprof.Trace, docPprofTrace)},
	}
}

// routes builds the handler: the Host guard around a mux of the table's
// endpoints, and a JSON 404 for every other path.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.table() {
		mux.Handle(r.pattern, s.serveEndpoint(r.e))
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "admin: no such endpoint: "+r.URL.Path))
	}))
	return s.guard(mux)
}

// guard checks the Host header (the DNS-rebinding guard) and sets the
// headers every answer carries.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if !s.hosts.allows(r.Host) {
			writeError(w, errorf(http.StatusForbidden,
				"admin: the Host header "+strconv.Quote(r.Host)+" does not name this admin listener (a guard against DNS rebinding): use its address"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveEndpoint dispatches on the method, then checks access: the token,
// and for a mutation its content type and body size.
func (s *Server) serveEndpoint(e endpoint) http.Handler {
	allow := make([]string, 0, len(e)+1)
	for m := range e {
		allow = append(allow, m)
		if m == http.MethodGet {
			allow = append(allow, http.MethodHead)
		}
	}
	slices.Sort(allow)
	allowed := strings.Join(allow, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := r.Method
		if m == http.MethodHead {
			m = http.MethodGet
		}
		o, ok := e[m]
		if !ok {
			w.Header().Set("Allow", allowed)
			writeError(w, errorf(http.StatusMethodNotAllowed,
				"admin: "+r.URL.Path+" does not take "+r.Method+"; it takes "+allowed))
			return
		}
		if err := s.authorize(w, r, o.access); err != nil {
			writeError(w, err)
			return
		}
		if o.access == mutate {
			if err := s.checkBody(w, r); err != nil {
				writeError(w, err)
				return
			}
		}
		o.h(w, r)
	})
}

// authorize checks the bearer token where an operation needs it.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, a access) *apiError {
	switch {
	case a == public, a == read && s.reach != listen.Open:
		return nil
	case !s.token.set:
		return errorf(http.StatusForbidden, "admin: the API is read-only: no token is set (admin.token_file)")
	case s.token.matches(r):
		return nil
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
	if r.Header.Get("Authorization") == "" {
		return errorf(http.StatusUnauthorized, `admin: this needs "Authorization: Bearer TOKEN" with the token of admin.token_file`)
	}
	return errorf(http.StatusUnauthorized, "admin: the bearer token does not match admin.token_file")
}

// checkBody checks a mutation's content type and caps its body. A mutation
// without a body (no Content-Length or Transfer-Encoding, or a length of 0:
// DELETE, a plain reload) needs no content type; the token it needs anyway
// is what keeps browsers' cross-site requests out.
func (s *Server) checkBody(w http.ResponseWriter, r *http.Request) *apiError {
	if r.ContentLength == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errorf(http.StatusUnsupportedMediaType,
			"admin: a change needs \"Content-Type: application/json\", got "+strconv.Quote(r.Header.Get("Content-Type")))
	}
	if r.ContentLength > s.p.MaxBodyBytes {
		return tooLarge(s.p.MaxBodyBytes)
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.p.MaxBodyBytes)
	return nil
}

// readBody reads a mutation's body, capped by checkBody.
func readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	b, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge(limit)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "admin: reading the body: "+err.Error())
	}
	return b, nil
}

func tooLarge(limit int64) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, "admin: the body is larger than "+strconv.FormatInt(limit, 10)+" bytes")
}
