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
// it works offline, and the Content-Security-Policy of guard allows nothing
// else.
//
//go:embed ui/index.html ui/app.js ui/style.css
var ui embed.FS

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
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
