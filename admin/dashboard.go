package admin

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
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

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, "ui/index.html")
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := path.Clean(r.URL.Path) // "/ui/app.js"
	if name == "/ui/index.html" || !strings.HasPrefix(name, "/ui/") {
		writeError(w, errorf(http.StatusNotFound, "admin: no such file: "+r.URL.Path))
		return
	}
	serveAsset(w, name[1:])
}

func serveAsset(w http.ResponseWriter, name string) {
	b, err := fs.ReadFile(ui, name)
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "admin: no such file: /"+name))
		return
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
