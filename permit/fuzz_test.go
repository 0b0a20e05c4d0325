package permit_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/permit"
)

// fuzzGroups has a group of one slot with a per-key rate limit, so that
// bodies meet every answer: grants, refusals for concurrency and rate,
// errors.
const fuzzGroups = `
[[group]]
name = "jobs"
key = "header:X-Tenant"
  [group.concurrency]
  law = "fixed"
  limit = 1
  [group.queue]
  max = 0
  [group.rate]
  algorithm = "token_bucket"
  rate = 5
  burst = 3
`

func fuzzServer(t testing.TB) (*env, http.Handler) {
	e := newEnv(t, fuzzGroups, permit.Params{})
	srv, err := permit.NewServer(permit.ServerParams{Service: e.svc, Listen: "unix:///nonexistent/p.sock"})
	if err != nil {
		t.Fatal(err)
	}
	return e, srv.Handler()
}

// post sends body to path, which may be any bytes (set as the URL's path,
// not parsed).
func post(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	r.URL.Path = path
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// FuzzAcquireJSON sends any body to POST /v1/permits: the answer is a JSON
// object with a status the API documents, a grant can be released, a
// refusal carries its reason and Retry-After, and no request leaves a slot
// held.
func FuzzAcquireJSON(f *testing.F) {
	for _, s := range []string{
		`{"group":"jobs"}`, `{"group":"jobs","key":"t1","priority":"critical","cost":1,"wait_ms":10}`,
		`{"group":"jobs","priority":"7"}`, `{"group":"nope"}`, `{"group":"jobs","cost":-1}`, `{"group":"jobs","wait_ms":99999999999}`,
		`{"group":"jobs","key":"` + strings.Repeat("k", 300) + `"}`, `{"group":"jobs","extra":1}`, `{"group":1}`, `[]`, `null`, `{`, ``,
		`{"group":"jobs"}{"group":"jobs"}`, `{"group":"jobs","cost":1e3}`, `{"group":"jobs","priority":"CRITICAL"}`,
		`{"group":"jobs","cost":9223372036854775807}`, `{"GROUP":"jobs"}`, "{\"group\":\"jobs\",\"key\":\"\\u0000\"}",
	} {
		f.Add([]byte(s))
	}
	e, h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		e.gclk.Advance(time.Second) // the rate limit refills between inputs
		w := post(h, "/v1/permits", body)
		defer func() {
			if n := e.inFlight(t, "jobs"); n != 0 { // a failure below: leave the next input a clean gate
				e.svc.Stop()
				e, h = fuzzServer(t)
			}
		}()
		var ans map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil {
			t.Fatalf("answer %d is not a JSON object: %q (%v)", w.Code, w.Body, err)
		}
		switch w.Code {
		case http.StatusOK:
			id, _ := ans["id"].(string)
			r := post(h, "/v1/permits/"+id+"/release", []byte(`{"outcome":"success"}`))
			if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"released"`) {
				t.Fatalf("release of grant %v: %d %s", ans, r.Code, r.Body)
			}
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			if ans["reason"] == "" || ans["reason"] == nil || w.Header().Get("Retry-After") == "" || w.Header().Get("Sluice-Reason") != ans["reason"] {
				t.Fatalf("refusal %d %v %v", w.Code, ans, w.Header())
			}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
			if msg, _ := ans["error"].(string); !strings.HasPrefix(msg, "permit: ") {
				t.Fatalf("error %d without a message: %v", w.Code, ans)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
		if n := e.inFlight(t, "jobs"); n != 0 {
			t.Fatalf("in flight %d after %q", n, body)
		}
	})
}

// FuzzReleaseJSON sends any id and body to POST /v1/permits/{id}/release
// while one permit is held: only its own id releases it, and only once.
func FuzzReleaseJSON(f *testing.F) {
	for _, s := range [][2]string{
		{"", `{"outcome":"success","latency_ms":12.5}`}, {"", `{"outcome":"dropped"}`}, {"", `{"outcome":"ignored","latency_ms":0}`},
		{"0000000000000000", `{"outcome":"success"}`}, {"ffffffffffffffff", `{"outcome":"success"}`}, {"", `{"outcome":"success","latency_ms":-1}`},
		{"", `{"outcome":"success","latency_ms":1e300}`}, {"", `{"outcome":"fine"}`}, {"", `{}`}, {"x/y", `{"outcome":"success"}`},
		{"", `{"outcome":"success","latency_ms":"12"}`}, {"", `{"outcome":"success"} x`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	e, h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		e.gclk.Advance(time.Second)
		g := e.grant(t, permit.Request{Group: "jobs"})
		defer e.svc.Release(g.ID, gate.Ignored, 0) // whatever happens below
		if id == "" {
			id = g.ID.String()
		}
		w := post(h, "/v1/permits/"+id+"/release", body)
		var ans map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil && w.Code != http.StatusNotFound {
			t.Fatalf("answer %d is not JSON: %q", w.Code, w.Body)
		}
		parsed, perr := permit.ParseID(id)
		released := w.Code == http.StatusOK
		switch {
		case released && (perr != nil || parsed != g.ID):
			t.Fatalf("id %q released permit %v", id, g.ID)
		case w.Code != http.StatusOK && w.Code != http.StatusBadRequest && w.Code != http.StatusNotFound && w.Code != http.StatusRequestEntityTooLarge:
			t.Fatalf("status %d for %q %q: %s", w.Code, id, body, w.Body)
		}
		r, _ := e.svc.Release(g.ID, gate.Ignored, 0)
		if released != (r == permit.AlreadyReleased) {
			t.Fatalf("answer %d but the permit's state is %v", w.Code, r)
		}
		if n := e.inFlight(t, "jobs"); n != 0 {
			t.Fatalf("in flight %d", n)
		}
	})
}
