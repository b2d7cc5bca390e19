package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// The board's page, script and style are built into the binary, so the
// board works on a machine with no network and no files beside foreman.
//
//go:embed assets
var assets embed.FS

var indexHTML = mustRead("assets/index.html")

func mustRead(name string) []byte {
	b, err := fs.ReadFile(assets, name)
	if err != nil {
		panic(err) // the file is embedded at build time; missing means a broken build
	}
	return b
}

func serveIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(indexHTML)
}

func serveAssets() http.Handler {
	files := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A directory listing would only show the same three files.
		if r.URL.Path == "/assets/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
