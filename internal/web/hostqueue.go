package web

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// foreman host (docs/HOST.md) writes its queue and the logs of its checks
// into one directory (host.logs); where foreman run has that directory on
// the same machine, the board serves both: the queue as JSON at /ci/queue,
// shown on the board by hostqueue.js, and each log at /ci/logs/NAME, the
// URL the host's verdicts give.

// logNameRE is a log file's name as the host makes it: the component's
// name made a file name, a dash, the run, .log; or a landing's receipt,
// the component's name, a dash, the landed commit, .receipt.json. Nothing
// else is served.
var logNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.(log|receipt\.json)$`)

// serveCIQueue serves the host's queue.json; with none, a JSON object that
// says why ({"absent": ...}), not an error: most boards have no host, and
// a browser reports every failed request as a page error.
func (s *Server) serveCIQueue(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	if s.opts.HostLogs == "" {
		_, _ = w.Write([]byte(`{"absent":"host.logs is not known to this board"}` + "\n"))
		return
	}
	data, err := os.ReadFile(filepath.Join(s.opts.HostLogs, "queue.json"))
	if err != nil {
		_, _ = w.Write([]byte(`{"absent":"no foreman host has written its queue in host.logs yet"}` + "\n"))
		return
	}
	_, _ = w.Write(data)
}

func (s *Server) serveCILog(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.opts.HostLogs == "" || !logNameRE.MatchString(name) {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(filepath.Join(s.opts.HostLogs, name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if strings.HasSuffix(name, ".receipt.json") {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, fi.ModTime(), f)
}
