package web

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
)

// The board's page, script and style are built into the binary, so the
// board works on a machine with no network and no files beside foreman.
//
//go:embed assets
var assets embed.FS

// The page comes in two halves, and the board as it is now goes between
// them (serveIndex).
var indexHead, indexTail = splitIndex(mustRead("assets/index.html"))

// boardMark is where, in index.html, the page carries the board.
const boardMark = "<!--board-->"

func splitIndex(page []byte) ([]byte, []byte) {
	head, tail, ok := bytes.Cut(page, []byte(boardMark))
	if !ok {
		panic("web: index.html has no " + boardMark) // a broken build
	}
	return head, tail
}

func mustRead(name string) []byte {
	b, err := fs.ReadFile(assets, name)
	if err != nil {
		panic(err) // the file is embedded at build time; missing means a broken build
	}
	return b
}

// serveIndex serves the page with the board as it is now inside it, as
// JSON in a data block the script draws before it opens the live stream:
// so the first paint shows the build. Waiting for the stream's first
// event left a page that was looked at (or captured, as headless browsers
// do at the load event) before it came on "connecting…" with empty
// panels (issue 48). A data block is never run (its type is not a
// script's), so the policy that lets the page run only its own scripts
// holds; and encoding/json escapes <, > and &, so no text from the room
// can end the block.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	// Every change so far is in, but a snapshot taken since is as good
	// as a new one: a page load does not cost the bot a View of its own.
	b := s.boardOf(r.Context(), want{gen: s.generation()})
	data := mustJSON(&b)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	page := make([]byte, 0, len(indexHead)+len(data)+len(indexTail)+80)
	page = append(page, indexHead...)
	page = append(page, `<script id="board-data" type="application/json">`...)
	page = append(page, data...)
	page = append(page, "</script>"...)
	page = append(page, indexTail...)
	_, _ = w.Write(page)
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
