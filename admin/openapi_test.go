package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/internal/redistest"
)

// openAPIDoc fetches and decodes GET /v1/openapi.json, without a token.
func openAPIDoc(t *testing.T, f *fixture) map[string]any {
	t.Helper()
	a := f.get(t, "/v1/openapi.json")
	if a.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", a.status, a.body)
	}
	var doc map[string]any
	if err := json.Unmarshal(a.body, &doc); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi %v, want 3.1.0", doc["openapi"])
	}
	return doc
}

// documented is the document's paths and the methods of each, upper-case.
func documented(t *testing.T, doc map[string]any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for path, item := range doc["paths"].(map[string]any) {
		for k := range item.(map[string]any) {
			if k != "parameters" {
				out[path] = append(out[path], strings.ToUpper(k))
			}
		}
		slices.Sort(out[path])
	}
	return out
}

// TestOpenAPIRoutes: the document lists every route of the table with its
// methods and nothing else, and the served mux agrees: every documented
// method of every documented path is routed, every other method is a 405
// whose Allow names the documented ones, every path param is declared.
func TestOpenAPIRoutes(t *testing.T) {
	f := newFixture(t, testConfig)
	doc := openAPIDoc(t, f)
	paths := documented(t, doc)

	want := map[string][]string{}
	for _, r := range f.srv.table() {
		want[strings.TrimSuffix(r.pattern, "{$}")] = slices.Sorted(maps.Keys(r.e))
	}
	for path, ms := range want {
		if !slices.Equal(paths[path], ms) {
			t.Errorf("%s: documented %v, routed %v", path, paths[path], ms)
		}
	}
	for path := range paths {
		if _, ok := want[path]; !ok {
			t.Errorf("%s is documented but not routed", path)
		}
	}
	for _, must := range []string{"/", "/livez", "/readyz", "/metrics", "/v1/openapi.json", "/v1/status", "/v1/groups",
		"/v1/groups/{name}", "/v1/groups/{name}/global", "/v1/history", "/v1/reload", "/debug/pprof/", "/debug/pprof/{profile}"} {
		if _, ok := paths[must]; !ok {
			t.Errorf("%s is not documented", must)
		}
	}

	// The schemas carry package api's doc comments.
	group := doc["components"].(map[string]any)["schemas"].(map[string]any)["Group"].(map[string]any)
	if d := group["properties"].(map[string]any)["limit"].(map[string]any)["description"]; d == nil || d != api.Docs["Group.Limit"] {
		t.Errorf("Group.limit's description %q, want %q", d, api.Docs["Group.Limit"])
	}

	wildcard := regexp.MustCompile(`\{([a-z]+)\}`)
	values := map[string]string{"name": "api", "file": "app.js", "profile": "heap"}
	h := f.srv.Handler()
	host := strings.TrimPrefix(f.url, "http://")
	call := func(method, path string) *httptest.ResponseRecorder {
		var body *strings.Reader
		if method == http.MethodPatch || method == http.MethodPost || method == http.MethodPut {
			body = strings.NewReader("{}")
		} else {
			body = strings.NewReader("")
		}
		r := httptest.NewRequest(method, path, body)
		r.Host = host
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Content-Type", "application/json")
		// A profile or a trace ends with its request: this one is over.
		ctx, cancel := context.WithCancel(r.Context())
		cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(ctx))
		return w
	}
	for path, ms := range paths {
		item := doc["paths"].(map[string]any)[path].(map[string]any)
		declared := map[string]bool{}
		if ps, ok := item["parameters"].([]any); ok {
			for _, p := range ps {
				declared[p.(map[string]any)["name"].(string)] = true
			}
		}
		concrete := wildcard.ReplaceAllStringFunc(path, func(w string) string {
			name := w[1 : len(w)-1]
			if !declared[name] {
				t.Errorf("%s: path parameter %s is not declared", path, name)
			}
			return values[name]
		})
		allow := slices.Clone(ms)
		if slices.Contains(ms, http.MethodGet) {
			allow = append(allow, http.MethodHead)
		}
		slices.Sort(allow)
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			w := call(m, concrete)
			switch {
			case slices.Contains(allow, m):
				if w.Code == http.StatusMethodNotAllowed || strings.Contains(w.Body.String(), "no such endpoint") {
					t.Errorf("%s %s (documented): %d %s", m, concrete, w.Code, w.Body)
				}
			case w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != strings.Join(allow, ", "):
				t.Errorf("%s %s (not documented): %d, Allow %q; want 405, Allow %q", m, concrete, w.Code, w.Header().Get("Allow"), strings.Join(allow, ", "))
			}
		}
	}
	for _, p := range []string{"/v1/nope", "/v1/groups/api/nope", "/debug/pprofx", "/ui"} {
		if w := call(http.MethodGet, p); w.Code != http.StatusNotFound {
			t.Errorf("GET %s (not documented): %d, want 404", p, w.Code)
		}
	}
}

// exchange is a request to send and the documented path it is an instance of.
type exchange struct {
	path string // the document's path
	req  req
	want int // the status the request must get
}

// TestOpenAPIAnswers: real answers, of success and of failure, match the
// document: their status is documented for the operation, their content
// type too, and a JSON body is valid against its schema.
func TestOpenAPIAnswers(t *testing.T) {
	f := newFixture(t, testConfig)
	f.serve(t, "/api/x", 20, 30*time.Millisecond, 0)
	f.tick(time.Second)
	f.tick(time.Second)
	doc := openAPIDoc(t, f)
	tok := testToken
	exchanges := []exchange{
		{"/", req{method: "GET", path: "/"}, 200},
		{"/ui/{file}", req{method: "GET", path: "/ui/app.js"}, 200},
		{"/ui/{file}", req{method: "GET", path: "/ui/style.css"}, 200},
		{"/ui/{file}", req{method: "GET", path: "/ui/nope.js"}, 404},
		{"/livez", req{method: "GET", path: "/livez"}, 200},
		{"/readyz", req{method: "GET", path: "/readyz"}, 200},
		{"/metrics", req{method: "GET", path: "/metrics"}, 200},
		{"/v1/openapi.json", req{method: "GET", path: "/v1/openapi.json"}, 200},
		{"/v1/status", req{method: "GET", path: "/v1/status"}, 200},
		{"/v1/status", req{method: "PUT", path: "/v1/status"}, 405},
		{"/v1/status", req{method: "GET", path: "/v1/status", host: "evil.example"}, 403},
		{"/v1/groups", req{method: "GET", path: "/v1/groups"}, 200},
		{"/v1/groups/{name}", req{method: "GET", path: "/v1/groups/api"}, 200},
		{"/v1/groups/{name}", req{method: "GET", path: "/v1/groups/nope"}, 404},
		{"/v1/groups/{name}", req{method: "PATCH", path: "/v1/groups/api", body: `{"targets": {"latency": "150ms"}, "keep_on_reload": true}`, token: tok}, 200},
		{"/v1/groups/{name}", req{method: "PATCH", path: "/v1/groups/api", body: `{"nope": 1, "targets": {"latency": 5}}`, token: tok}, 400},
		{"/v1/groups/{name}", req{method: "PATCH", path: "/v1/groups/api", body: `{"targets": {"latency": "150ms"}}`}, 401},
		{"/v1/groups/{name}", req{method: "PATCH", path: "/v1/groups/api", body: `{}`, token: tok, contentType: "text/plain"}, 415},
		{"/v1/groups/{name}/global", req{method: "GET", path: "/v1/groups/api/global"}, 409},
		{"/v1/history", req{method: "GET", path: "/v1/history"}, 200},
		{"/v1/history", req{method: "GET", path: "/v1/history?since=yesterday"}, 400},
		{"/v1/reload", req{method: "POST", path: "/v1/reload", token: tok, contentType: "application/json"}, 200},
		{"/v1/reload", req{method: "POST", path: "/v1/reload", body: `{"keep": 1}`, token: tok}, 400},
		{"/debug/pprof/", req{method: "GET", path: "/debug/pprof/"}, 200},
		{"/debug/pprof/{profile}", req{method: "GET", path: "/debug/pprof/goroutine?debug=1"}, 200},
		{"/debug/pprof/{profile}", req{method: "GET", path: "/debug/pprof/nope"}, 404},
		{"/debug/pprof/cmdline", req{method: "GET", path: "/debug/pprof/cmdline"}, 200},
		{"/debug/pprof/trace", req{method: "GET", path: "/debug/pprof/trace?seconds=0.01"}, 200},
	}
	for _, x := range exchanges {
		checkAnswer(t, doc, f, x)
	}

	// The global read-outs (a fallback link to Redis, the groups' quotas).
	g, _ := globalFixture(t)
	checkAnswer(t, doc, g, exchange{"/v1/status", req{method: "GET", path: "/v1/status"}, 200})
	checkAnswer(t, doc, g, exchange{"/v1/groups", req{method: "GET", path: "/v1/groups"}, 200})

	// A global quota's definition, on a real Redis.
	q, _, _ := quotaNode(t, redistest.Start(t), "100")
	for _, x := range []exchange{
		{"/v1/groups/{name}/global", req{method: "GET", path: "/v1/groups/api/global"}, 200},
		{"/v1/groups/{name}/global", req{method: "PATCH", path: "/v1/groups/api/global", body: `{"rate": 50}`, token: tok}, 200},
		{"/v1/groups/{name}/global", req{method: "PATCH", path: "/v1/groups/api/global", body: `{"rate": "fast"}`, token: tok}, 400},
		{"/v1/groups/{name}/global", req{method: "DELETE", path: "/v1/groups/api/global", token: tok, contentType: "application/json"}, 200},
		{"/v1/groups/{name}", req{method: "GET", path: "/v1/groups/api"}, 200},
		{"/v1/status", req{method: "GET", path: "/v1/status"}, 200},
	} {
		checkAnswer(t, doc, q, x)
	}
}

// checkAnswer sends x and checks the answer against the document.
func checkAnswer(t *testing.T, doc map[string]any, f *fixture, x exchange) {
	t.Helper()
	a := f.do(t, x.req)
	what := fmt.Sprintf("%s %s: %d", x.req.method, x.req.path, a.status)
	if a.status != x.want {
		t.Errorf("%s, want %d: %s", what, x.want, a.body)
		return
	}
	item, ok := doc["paths"].(map[string]any)[x.path].(map[string]any)
	if !ok {
		t.Errorf("%s: %s is not documented", what, x.path)
		return
	}
	operation, ok := item[strings.ToLower(x.req.method)].(map[string]any)
	if !ok && a.status == http.StatusMethodNotAllowed {
		// A method the path does not take: the JSON error every refusal is.
		operation = map[string]any{"responses": map[string]any{"405": map[string]any{"content": map[string]any{
			"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}}}
	} else if !ok {
		t.Errorf("%s: %s %s is not documented", what, x.req.method, x.path)
		return
	}
	responses := operation["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(a.status)].(map[string]any)
	if !ok {
		resp, ok = responses[strconv.Itoa(a.status/100)+"XX"].(map[string]any)
	}
	if !ok {
		t.Errorf("%s: the status is not documented", what)
		return
	}
	mt, _, _ := mime.ParseMediaType(a.header.Get("Content-Type"))
	media, ok := resp["content"].(map[string]any)[mt].(map[string]any)
	if !ok {
		t.Errorf("%s: content type %q is not documented (%v)", what, mt, slices.Sorted(maps.Keys(resp["content"].(map[string]any))))
		return
	}
	if mt != "application/json" {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(a.body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: not JSON: %v", what, err)
		return
	}
	for _, p := range (&validator{doc: doc}).check(media["schema"], v, "$") {
		t.Errorf("%s: %s", what, p)
	}
}

// validator checks JSON values against the subset of JSON Schema the
// document uses: type (a name or a list), properties, required,
// additionalProperties (false or a schema), items, anyOf, $ref into
// components, minimum, format date-time.
type validator struct{ doc map[string]any }

func (vd *validator) check(schema any, v any, at string) []string {
	s, ok := schema.(map[string]any)
	if !ok {
		return []string{at + ": the schema is not an object"}
	}
	if ref, ok := s["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		target := vd.doc["components"].(map[string]any)["schemas"].(map[string]any)[name]
		if !ok || target == nil {
			return []string{at + ": unresolved $ref " + ref}
		}
		return vd.check(target, v, at)
	}
	if any, ok := s["anyOf"].([]any); ok {
		var all []string
		for _, alt := range any {
			ps := vd.check(alt, v, at)
			if len(ps) == 0 {
				return nil
			}
			all = append(all, ps...)
		}
		return []string{at + ": matches no alternative: " + strings.Join(all, "; ")}
	}
	var types []string
	switch typ := s["type"].(type) {
	case string:
		types = []string{typ}
	case []any:
		for _, x := range typ {
			types = append(types, x.(string))
		}
	case nil:
		return nil // any value
	}
	kind := jsonKind(v)
	if !slices.Contains(types, kind) && !(kind == "integer" && slices.Contains(types, "number")) {
		return []string{fmt.Sprintf("%s: a %s, want %v", at, kind, types)}
	}
	var problems []string
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := x[r.(string)]; !ok {
				problems = append(problems, at+": no "+r.(string))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			sub, ok := props[k]
			if !ok {
				switch extra := s["additionalProperties"].(type) {
				case bool:
					if !extra {
						problems = append(problems, at+": undocumented field "+strconv.Quote(k))
					}
					continue
				case map[string]any:
					sub = extra
				default:
					continue
				}
			}
			problems = append(problems, vd.check(sub, x[k], at+"."+k)...)
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range x {
				problems = append(problems, vd.check(items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case json.Number:
		if m, ok := s["minimum"].(float64); ok {
			if f, _ := x.Float64(); f < m {
				problems = append(problems, fmt.Sprintf("%s: %s is below the minimum %v", at, x, m))
			}
		}
	case string:
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
				problems = append(problems, at+": not an RFC 3339 instant: "+x)
			}
		}
	}
	return problems
}

func asList(v any) []any { l, _ := v.([]any); return l }

// jsonKind is the JSON Schema type of a decoded value.
func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "integer"
		}
		if _, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// TestOpenAPIValidator: the validator refuses what the schemas exclude, so
// the answers' checks can fail.
func TestOpenAPIValidator(t *testing.T) {
	f := newFixture(t, testConfig)
	doc := openAPIDoc(t, f)
	vd := &validator{doc: doc}
	group := map[string]any{"$ref": "#/components/schemas/Group"}
	a := f.get(t, "/v1/groups/api")
	good := func() map[string]any {
		dec := json.NewDecoder(bytes.NewReader(a.body))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if ps := vd.check(group, good(), "$"); len(ps) > 0 {
		t.Fatalf("a real group is refused: %v", ps)
	}
	for name, spoil := range map[string]func(map[string]any){
		"an undocumented field": func(v map[string]any) { v["surprise"] = true },
		"a missing field":       func(v map[string]any) { delete(v, "limit") },
		"a wrong type":          func(v map[string]any) { v["limit"] = "ten" },
		"a fraction for an int": func(v map[string]any) { v["limit"] = json.Number("9.5") },
		"a negative count":      func(v map[string]any) { v["requests"].(map[string]any)["arrived"] = json.Number("-1") },
		"null for a struct":     func(v map[string]any) { v["queue"] = nil },
		"a bad instant":         func(v map[string]any) { v["decision"].(map[string]any)["at"] = "yesterday" },
		"a bad nested value":    func(v map[string]any) { v["config"].(map[string]any)["queue"].(map[string]any)["max"] = "x" },
	} {
		v := good()
		spoil(v)
		if ps := vd.check(group, v, "$"); len(ps) == 0 {
			t.Errorf("%s passes", name)
		}
	}
	if ps := vd.check(map[string]any{"$ref": "#/components/schemas/Nope"}, nil, "$"); len(ps) == 0 {
		t.Error("an unresolved $ref passes")
	}
}
