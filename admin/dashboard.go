package admin

import (
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/admin/api"
	"github.com/sluicehq/sluice/internal/listen"
)

// ui is the dashboard: one page, its script and its style sheet, served
// from the binary. It loads nothing from elsewhere (no CDN, no web font), so
// it works offline, and its Content-Security-Policy (pagePolicy) allows
// nothing else: no other origin, no inline script.
//
//go:embed ui/index.html ui/app.js ui/style.css
var ui embed.FS

// pagePolicy is the Content-Security-Policy of the dashboard's files.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// page serves the dashboard. When the request may read the API (on
// loopback or a unix socket, or with the token), the page carries its first
// state, the answers of /v1/groups, /v1/status and /v1/history, in a JSON
// data block that the script renders at once: the page shows the groups as
// it loads (a screenshot too), not "connecting" until its first poll. A
// request that may not read gets the page alone, which holds no data.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if s.reach == listen.Open && !(s.token.set && s.token.matches(r)) {
		serveAsset(w, "ui/index.html", nil)
		return
	}
	first, err := json.Marshal(struct {
		Groups  api.Groups  `json:"groups"`
		Status  api.Status  `json:"status"`
		History api.History `json:"history"`
	}{s.groupsView(), s.statusView(), s.history.view(0, s.p.HistoryInterval)})
	if err != nil {
		first = nil // the script polls as it would without it
	}
	serveAsset(w, "ui/index.html", first)
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := path.Clean(r.URL.Path) // "/ui/app.js"
	if name == "/ui/index.html" || !strings.HasPrefix(name, "/ui/") {
		writeError(w, errorf(http.StatusNotFound, "admin: no such file: "+r.URL.Path))
		return
	}
	serveAsset(w, name[1:], nil)
}

// firstStateMark is where index.html takes the page's first state.
const firstStateMark = "<!-- first state -->"

// serveAsset serves the file name of ui; first, if not nil, is JSON for the
// page's first-state block (json.Marshal escapes "<", so it cannot end the
// block early).
func serveAsset(w http.ResponseWriter, name string, first []byte) {
	b, err := fs.ReadFile(ui, name)
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "admin: no such file: /"+name))
		return
	}
	if first != nil {
		b = bytes.Replace(b, []byte(firstStateMark),
			slices.Concat([]byte(`<script type="application/json" id="first-state">`), first, []byte(`</script>`)), 1)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", pagePolicy)
	_, _ = w.Write(b)
}
