package admin

import (
	"encoding"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/internal/durtext"
)

// The OpenAPI 3.1 document of the API, GET /v1/openapi.json: built from the
// route table (routes.go), each operation's opDoc, and package api's types
// by reflection, so it lists what is served and the shapes that are sent.

// opDoc is what the OpenAPI document says of an operation.
type opDoc struct {
	summary string
	// answer is the JSON type of the 200 answer, as a nil pointer
	// ((*api.Status)(nil)); nil when the answer is not JSON, then media
	// is its content type.
	answer any
	media  string
	// body is the request body's schema (a JSON Schema literal), nil for
	// none; bodyRequired says it must be sent.
	body         jsonObject
	bodyRequired bool
	// query are the query parameters.
	query []queryParam
	// also are the JSON answers other than 200 and the errors, by status
	// (the 503 of /readyz), as nil pointers.
	also map[int]any
	// plainErrors marks a handler of the standard library (pprof,
	// promhttp) whose own errors are text/plain; the guard's stay JSON.
	plainErrors bool
}

// queryParam is a query parameter of an operation.
type queryParam struct {
	name, description string
	schema            jsonObject
}

type jsonObject = map[string]any

// pathParams describes the wildcards of the table's patterns.
var pathParams = map[string]string{
	"name":    "the group's name",
	"file":    "a file of the dashboard: app.js or style.css",
	"profile": "a runtime profile: allocs, block, goroutine, heap, mutex, threadcreate",
}

// The operations' documents, in the order of the table.
var (
	docPage  = opDoc{summary: "The live dashboard (an HTML page; it holds no data, its script reads /v1/*).", media: "text/html"}
	docAsset = opDoc{summary: "A file of the dashboard: its script or its style sheet.",
		media: "text/javascript, text/css"}
	docLivez  = opDoc{summary: "Liveness: 200 while the process serves.", answer: (*api.Health)(nil)}
	docReadyz = opDoc{summary: "Readiness: 200 when sluice admits traffic, else 503 and why.", answer: (*api.Health)(nil),
		also: map[int]any{http.StatusServiceUnavailable: (*api.Health)(nil)}}
	docMetrics = opDoc{summary: "Prometheus metrics, in the text format or OpenMetrics (by the Accept header).",
		media: "text/plain, application/openmetrics-text", plainErrors: true}
	docOpenAPI = opDoc{summary: "This document.", answer: (*jsonObject)(nil)}
	docStatus  = opDoc{summary: "The daemon: version, readiness, config in force, control loop, state file, resources, Redis, circuit breaker, front-ends.",
		answer: (*api.Status)(nil)}
	docGroups = opDoc{summary: "Every group's read-out, in the config's order.", answer: (*api.Groups)(nil)}
	docGroup  = opDoc{summary: "One group's read-out: limit, queue, rate, targets, latency, counts, the law's decision and why, override, config in force.",
		answer: (*api.Group)(nil)}
	docPatchGroup = opDoc{summary: "Override a group's targets, concurrency bounds or fixed limit, rate and queue at runtime (by section, as in GET's config); " +
		"\"keep_on_reload\": true keeps the override across reloads. Answers the group's read-out, with notes.",
		answer: (*api.Group)(nil), bodyRequired: true, body: jsonObject{
			"type":        "object",
			"description": "The fields to change, by section, as in the group's config: {\"targets\": {\"latency\": \"150ms\"}}.",
			"properties":  jsonObject{"keep_on_reload": jsonObject{"type": "boolean"}},
		}}
	docGlobal = opDoc{summary: "The group's global quota (rate scope \"global\") in force on this node. 409 when it has none.",
		answer: (*api.Quota)(nil)}
	docPatchGlobal = opDoc{summary: "Change the global quota's definition in Redis, for every node sharing it: rate and burst, or limit and window.",
		answer: (*api.Quota)(nil), bodyRequired: true, body: jsonObject{
			"type": "object", "additionalProperties": false,
			"properties": jsonObject{
				"rate": jsonObject{"type": "number"}, "burst": jsonObject{"type": "integer"},
				"limit": jsonObject{"type": "integer"}, "window": jsonObject{"type": "string", "description": "a duration: \"1s\", \"1m\""},
			},
		}}
	docDeleteGlobal = opDoc{summary: "Remove the global quota's definition from Redis: every node goes back to its configured quota.",
		answer: (*api.Quota)(nil)}
	docHistory = opDoc{summary: "The dashboard's time series: CPU, memory and each group's columns, oldest first.",
		answer: (*api.History)(nil), query: []queryParam{{"since", "only the points after this instant, in unix milliseconds",
			jsonObject{"type": "integer"}}}}
	docReload = opDoc{summary: "Read the config file again and apply it (as SIGHUP does); a refused config leaves the running one (422, its problems listed).",
		answer: (*api.Reload)(nil), body: jsonObject{"type": "object", "additionalProperties": false,
			"properties": jsonObject{"keep_overrides": jsonObject{"type": "boolean",
				"description": "keep every override in force, whatever its PATCH asked"}}}}
	docPprofIndex   = opDoc{summary: "Go's pprof index of runtime profiles.", media: "text/html", plainErrors: true}
	docPprofProfile = opDoc{summary: "A runtime profile (go tool pprof reads it; as text with ?debug=1).", media: "application/octet-stream, text/plain", plainErrors: true,
		query: []queryParam{{"debug", "1 or 2: as text instead", jsonObject{"type": "integer"}},
			{"seconds", "a delta profile over this many seconds", jsonObject{"type": "integer"}}}}
	docPprofCmdline = opDoc{summary: "The command line of the process.", media: "text/plain", plainErrors: true}
	docPprofCPU     = opDoc{summary: "A CPU profile.", media: "application/octet-stream", plainErrors: true,
		query: []queryParam{{"seconds", "how long to profile (default 30)", jsonObject{"type": "integer"}}}}
	docPprofSymbol = opDoc{summary: "Symbol lookup of program counters (POST a list of addresses).", media: "text/plain", plainErrors: true}
	docPprofTrace  = opDoc{summary: "An execution trace (go tool trace reads it).", media: "application/octet-stream", plainErrors: true,
		query: []queryParam{{"seconds", "how long to trace (default 1)", jsonObject{"type": "number"}}}}
)

// getOpenAPI answers the OpenAPI document.
func (s *Server) getOpenAPI(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, openAPI(s.table()))
}

// wildcard matches a pattern's wildcards.
var wildcard = regexp.MustCompile(`\{([a-z]+)\}`)

// openAPI builds the document of the routes. Its version is the API's,
// the v1 of its paths, not the daemon's: the document is public (it holds
// no data) and says nothing of the binary.
func openAPI(routes []route) jsonObject {
	schemas := schemaSet{}
	errRef := schemas.ref(reflect.TypeFor[api.Error]())
	paths := jsonObject{}
	for _, r := range routes {
		path := strings.TrimSuffix(r.pattern, "{$}")
		item := jsonObject{}
		var params []any
		for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
			params = append(params, jsonObject{"name": m[1], "in": "path", "required": true,
				"description": pathParams[m[1]], "schema": jsonObject{"type": "string"}})
		}
		if len(params) > 0 {
			item["parameters"] = params
		}
		for _, method := range slices.Sorted(maps.Keys(r.e)) {
			o := r.e[method]
			item[strings.ToLower(method)] = operation(o, errRef, &schemas)
		}
		paths[path] = item
	}
	return jsonObject{
		"openapi": "3.1.0",
		"info": jsonObject{
			"title":   "sluice admin API",
			"version": "v1",
			"description": "The admin API of sluice: health, read-outs, runtime overrides, reload, metrics, profiles. " +
				"Durations are seconds, ratios 0–1, instants RFC 3339, and a figure that is not known is null. " +
				"Reads need the bearer token only when the API listens off loopback; changes always need it. " +
				"Every 4xx and 5xx answer of sluice's own is a JSON Error. " +
				"The schemas are the Go types of package github.com/sluicehq/sluice/admin/api, and their descriptions its doc comments.",
		},
		"paths": paths,
		"components": jsonObject{
			"schemas": schemas,
			"securitySchemes": jsonObject{
				"bearer": jsonObject{"type": "http", "scheme": "bearer", "description": "the token of admin.token_file"},
			},
		},
	}
}

// operation documents one operation.
func operation(o op, errRef jsonObject, schemas *schemaSet) jsonObject {
	content := func(v any) jsonObject {
		return jsonObject{"application/json": jsonObject{"schema": schemas.ref(reflect.TypeOf(v).Elem())}}
	}
	ok := jsonObject{"description": "OK"}
	if o.doc.answer != nil {
		ok["content"] = content(o.doc.answer)
	} else {
		c := jsonObject{}
		for _, m := range strings.Split(o.doc.media, ", ") {
			c[m] = jsonObject{"schema": jsonObject{"type": "string"}}
		}
		ok["content"] = c
	}
	failure := func(what string) jsonObject {
		c := jsonObject{"application/json": jsonObject{"schema": errRef}}
		if o.doc.plainErrors {
			c["text/plain"] = jsonObject{"schema": jsonObject{"type": "string"}}
		}
		return jsonObject{"description": what, "content": c}
	}
	responses := jsonObject{
		"200": ok,
		"4XX": failure("A refused request: no such group or file (404), a method the path does not take (405), " +
			"no or a wrong token (401), a Host header that does not name the listener (403), a bad body (400, 413, 415, 422)."),
		"5XX": failure("A failure on sluice's side."),
	}
	for status, v := range o.doc.also {
		responses[strconv.Itoa(status)] = jsonObject{"description": http.StatusText(status), "content": content(v)}
	}
	doc := jsonObject{"summary": o.doc.summary, "responses": responses}
	switch o.access {
	case public:
		doc["security"] = []any{}
	case read:
		doc["security"] = []any{jsonObject{}, jsonObject{"bearer": []any{}}}
	case mutate:
		doc["security"] = []any{jsonObject{"bearer": []any{}}}
	}
	if o.doc.body != nil {
		doc["requestBody"] = jsonObject{"required": o.doc.bodyRequired,
			"content": jsonObject{"application/json": jsonObject{"schema": o.doc.body}}}
	}
	if len(o.doc.query) > 0 {
		var ps []any
		for _, q := range o.doc.query {
			ps = append(ps, jsonObject{"name": q.name, "in": "query", "description": q.description, "schema": q.schema})
		}
		doc["parameters"] = ps
	}
	return doc
}

// schemaSet holds the named schemas of the document's components: one per
// struct type, named after it ("Group"; "spec.Group" for another
// package's).
type schemaSet jsonObject

var (
	timeType      = reflect.TypeFor[time.Time]()
	seriesType    = reflect.TypeFor[api.Series]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	apiPkg        = reflect.TypeFor[api.Error]().PkgPath()
)

// ref is a reference to t's schema, added to the set with the types it
// holds.
func (ss schemaSet) ref(t reflect.Type) jsonObject {
	if t.Kind() != reflect.Struct || t == timeType {
		return ss.schema(t)
	}
	name := t.Name()
	if t.PkgPath() != apiPkg {
		name = t.String()
	}
	if _, ok := ss[name]; !ok {
		ss[name] = nil // taken: a type that holds itself ends here
		ss[name] = ss.object(t)
	}
	return jsonObject{"$ref": "#/components/schemas/" + name}
}

// schema is the JSON Schema of a value of type t, as encoding/json writes it.
func (ss schemaSet) schema(t reflect.Type) jsonObject {
	switch {
	case t == timeType:
		return jsonObject{"type": "string", "format": "date-time"}
	case t == seriesType:
		return jsonObject{"type": []any{"array", "null"}, "items": jsonObject{"type": []any{"number", "null"}}}
	case t.Kind() != reflect.Pointer && t.Implements(textMarshaler), t == durtext.Type:
		// A time.Duration is in gate/spec's types, whose MarshalJSON writes
		// it as text (durtext): no answer of package api holds one.
		return jsonObject{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(ss.ref(t.Elem()))
	case reflect.Struct:
		return ss.ref(t)
	case reflect.Slice:
		return jsonObject{"type": []any{"array", "null"}, "items": ss.ref(t.Elem())}
	case reflect.Map:
		return jsonObject{"type": []any{"object", "null"}, "additionalProperties": ss.ref(t.Elem())}
	case reflect.String:
		return jsonObject{"type": "string"}
	case reflect.Bool:
		return jsonObject{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jsonObject{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return jsonObject{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return jsonObject{"type": "number"}
	}
	return jsonObject{} // any value
}

// object is the schema of a struct: its JSON fields, those without
// omitempty or omitzero required, no others.
func (ss schemaSet) object(t reflect.Type) jsonObject {
	props, required := jsonObject{}, []any{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = describe(ss.schema(f.Type), docOf(t, f.Name))
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	return describe(jsonObject{"type": "object", "properties": props, "required": required, "additionalProperties": false},
		docOf(t, ""))
}

// docOf is the doc comment of package api's type t, or of its field, "" for
// another package's.
func docOf(t reflect.Type, field string) string {
	if t.PkgPath() != apiPkg {
		return ""
	}
	if field != "" {
		return api.Docs[t.Name()+"."+field]
	}
	return api.Docs[t.Name()]
}

// describe is s with its description, if there is one.
func describe(s jsonObject, d string) jsonObject {
	if d != "" {
		s["description"] = d
	}
	return s
}

// nullable is s or null.
func nullable(s jsonObject) jsonObject {
	if typ, ok := s["type"].(string); ok {
		n := jsonObject{}
		for k, v := range s {
			n[k] = v
		}
		n["type"] = []any{typ, "null"}
		return n
	}
	if _, ok := s["type"].([]any); ok {
		return s // already takes null
	}
	return jsonObject{"anyOf": []any{s, jsonObject{"type": "null"}}}
}
